#!/usr/bin/env python3
"""What a classifier trained on class-conditional rows loses when the rows lose
structure (issue 28, calib_ldp): real credit_data rows (80/20 split, sklearn
logistic regression), with features made independent within each class,
numeric columns shrunk toward their class means, or replaced by a Gaussian
with the class means and covariance. Reference only, not private.

    /usr/bin/python3 bench/probes/class_structure.py [build/credit_data.csv]
"""
import sys
import csv
import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
rows=list(csv.DictReader(open(sys.argv[1] if len(sys.argv) > 1 else 'build/credit_data.csv')))
cols=[c for c in rows[0] if c!='Status']
y=np.array([r['Status']=='good' for r in rows],int)
feats=[];names=[];isnum=[]
for c in cols:
    vals=[r[c] for r in rows]
    try:
        v=np.array([float(x) if x not in ('NA','') else np.nan for x in vals])
        na=np.isnan(v); lo,hi=np.nanmin(v),np.nanmax(v)
        feats.append(np.where(na,0,(v-lo)/(hi-lo)*2-1)); isnum.append(True)
        if na.any(): feats.append(na.astype(float)); isnum.append(False)
    except ValueError:
        for lev in sorted(set(vals)):
            feats.append(np.array([x==lev for x in vals],float)); isnum.append(False)
X=np.array(feats).T; isnum=np.array(isnum)
Xtr,Xte,ytr,yte=train_test_split(X,y,test_size=0.2,random_state=0)
def acc(Xs,ys): return LogisticRegression(max_iter=3000).fit(Xs,ys).score(Xte,yte)
print('real',acc(Xtr,ytr),'maj',max(yte.mean(),1-yte.mean()))
rng=np.random.default_rng(0)
Xi=Xtr.copy()
for k in (0,1):
    idx=np.where(ytr==k)[0]
    for j in range(X.shape[1]): Xi[idx,j]=Xtr[rng.permutation(idx),j]
print('all indep within class',acc(Xi,ytr))
nc=np.where(isnum)[0]; cc=np.where(~isnum)[0]
Xb=Xtr.copy()
for k in (0,1):
    idx=np.where(ytr==k)[0]; p=rng.permutation(idx)
    Xb[np.ix_(idx,nc)]=Xtr[np.ix_(p,nc)]
print('num block indep of cat block within class',acc(Xb,ytr))
Xn=Xtr.copy()
for k in (0,1):
    idx=np.where(ytr==k)[0]
    for j in nc: Xn[idx,j]=Xtr[rng.permutation(idx),j]
print('numerics mutually indep within class',acc(Xn,ytr))
Xg=Xtr.copy()
for k in (0,1):
    idx=np.where(ytr==k)[0]; Z=Xtr[np.ix_(idx,nc)]
    Xg[np.ix_(idx,nc)]=np.clip(rng.multivariate_normal(Z.mean(0),np.cov(Z.T),len(idx)),-1,1)
print('numerics gaussian per class',acc(Xg,ytr))
for f in (0.5,0.7):
    Xs=Xtr.copy()
    for k in (0,1):
        idx=np.where(ytr==k)[0]; Z=Xtr[np.ix_(idx,nc)]
        Xs[np.ix_(idx,nc)]=Z.mean(0)+f*(Z-Z.mean(0))
    print('numerics shrunk',f,acc(Xs,ytr))
# generator-like: numerics independent of cats within class AND shrunk
Xs=Xb.copy()
for k in (0,1):
    idx=np.where(ytr==k)[0]; Z=Xs[np.ix_(idx,nc)]
    Xs[np.ix_(idx,nc)]=Z.mean(0)+0.5*(Z-Z.mean(0))
print('num indep of cats, shrunk 0.5',acc(Xs,ytr))
