// privgen dashboard, start: the sign-in form and the first sign-in with a
// kept token. Loaded last, so every page's functions exist when it runs.
'use strict';

$('login-form').addEventListener('submit', (ev) => { ev.preventDefault(); signIn($('token').value.trim()); });
$('logout').addEventListener('click', () => signOut());

if (state.token) signIn(state.token); else signOut();
