/* Preset architectures, expressed as JSON so a preset and a job-spec
 * architecture go through the same builder (and a checkpoint stores either
 * the same way).
 *
 * Options (JSON object, all optional):
 *  mlp:        latent [32], hidden [[256, 256]], out [784], activation ["relu"|
 *              "leaky_relu"|"tanh"|"sigmoid"], out_activation ["none"|"tanh"|
 *              "sigmoid"], batchnorm [false], classes [0], embed [0 = one-hot],
 *              upsample [1], image [c, h, w]: with upsample f > 1 the last
 *              linear layer emits a (c, h/f, w/f) image that a fixed bilinear
 *              upsampling (align_corners false) maps to (c, h, w) = out values
 *  dcgan28:    latent [12], classes [10], embed [4], channels [1]
 *              DP-Sinkhorn generator (METHODS.md): [z, E(y)] -> convT k7 ->
 *              256x7x7 -> convT(4,2,1) 128x14x14 -> convT(4,2,1) 64x28x28 ->
 *              convT(3,1,1) channels x28x28 -> tanh. Our choice, as in DCGAN:
 *              batchnorm + ReLU after each hidden transposed conv, which then
 *              carries no bias; the output layer has a bias.
 *  dcgan32:    latent [100], classes [0], embed [0 = one-hot], channels [3],
 *              width [64]: convT k4 -> 4w x4x4 -> 2w x8x8 -> w x16x16 ->
 *              channels x32x32, batchnorm + ReLU, tanh.
 *  conv_small: latent [10], classes [10] (one-hot), hidden [200], channels
 *              [[16, 32]], kernel [5], upsample ["bilinear"], out_channels [1]
 *              DP-MERF/DP-SWD generator: FC -> BN -> ReLU -> FC (16*7*7) -> BN
 *              -> reshape -> x2 bilinear (align_corners, as
 *              nn.UpsamplingBilinear2d) -> conv5x5 -> ReLU -> x2 -> conv5x5 ->
 *              sigmoid. About 177k parameters with the defaults.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "engine/nn/nn_internal.h"

static long long opt_int(json_t *o, const char *k, long long d)
{
    json_t *v = json_object_get(o, k);
    return json_is_integer(v) ? json_integer_value(v) : d;
}

static const char *opt_str(json_t *o, const char *k, const char *d)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : d;
}

static void add(json_t *layers, json_t *l)
{
    json_array_append_new(layers, l);
}

static json_t *ly(const char *type)
{
    return json_pack("{s:s}", "type", type);
}

static json_t *conv(const char *type, long long out, long long k, long long s, long long p,
                    bool bias)
{
    return json_pack("{s:s,s:I,s:I,s:I,s:I,s:b}", "type", type, "out", out, "kernel", k, "stride",
                     s, "padding", p, "bias", bias);
}

static void add_label(json_t *layers, long long classes, long long embed)
{
    if (classes <= 0) return;
    if (embed > 0)
        add(layers,
            json_pack("{s:s,s:I,s:I}", "type", "label_embed", "classes", classes, "dim", embed));
    else
        add(layers, json_pack("{s:s,s:I}", "type", "label_onehot", "classes", classes));
}

static int build_mlp(json_t *o, json_t *arch, json_t *layers, pg_error *err)
{
    long long latent = opt_int(o, "latent", 32), out = opt_int(o, "out", 784);
    json_object_set_new(arch, "input", json_integer(latent));
    add_label(layers, opt_int(o, "classes", 0), opt_int(o, "embed", 0));
    const char *act = opt_str(o, "activation", "relu");
    const char *oact = opt_str(o, "out_activation", "none");
    bool bn = json_is_true(json_object_get(o, "batchnorm"));
    json_t *hidden = json_object_get(o, "hidden");
    json_t *def = json_pack("[i,i]", 256, 256);
    if (!hidden) hidden = def;
    if (!json_is_array(hidden)) {
        json_decref(def);
        return pg_error_set(err, PG_EINVAL, "mlp \"hidden\" must be an array of widths");
    }
    for (size_t i = 0; i < json_array_size(hidden); i++) {
        add(layers, json_pack("{s:s,s:O}", "type", "linear", "out", json_array_get(hidden, i)));
        if (bn) add(layers, ly("batchnorm"));
        json_t *a = ly(act);
        if (!strcmp(act, "leaky_relu")) json_object_set_new(a, "slope", json_real(0.2));
        add(layers, a);
    }
    json_decref(def);
    /* Low-resolution output: the last linear layer emits (c, h/f, w/f) and a
     * fixed bilinear x f upsampling (no parameters) maps it to (c, h, w). */
    long long up = opt_int(o, "upsample", 1);
    json_t *img = json_object_get(o, "image");
    if (up > 1) {
        long long c = json_integer_value(json_array_get(img, 0)),
                  h = json_integer_value(json_array_get(img, 1)),
                  w = json_integer_value(json_array_get(img, 2));
        if (!json_is_array(img) || json_array_size(img) != 3 || c < 1 || h < 1 || w < 1 || h % up ||
            w % up || c * h * w != out)
            return pg_error_set(err, PG_EINVAL,
                                "mlp \"upsample\" %lld needs \"image\" [c, h, w] with h and w "
                                "multiples of it and c h w = out",
                                up);
        add(layers, json_pack("{s:s,s:I}", "type", "linear", "out", c * (h / up) * (w / up)));
        add(layers, json_pack("{s:s,s:[I,I,I]}", "type", "reshape", "shape", c, h / up, w / up));
        add(layers, json_pack("{s:s,s:I,s:s,s:b}", "type", "upsample", "factor", up, "mode",
                              "bilinear", "align_corners", 0));
        add(layers, json_pack("{s:s,s:[I]}", "type", "reshape", "shape", out));
    } else {
        add(layers, json_pack("{s:s,s:I}", "type", "linear", "out", out));
    }
    if (strcmp(oact, "none")) add(layers, ly(oact));
    return PG_OK;
}

static void build_dcgan28(json_t *o, json_t *arch, json_t *layers)
{
    json_object_set_new(arch, "input", json_integer(opt_int(o, "latent", 12)));
    add_label(layers, opt_int(o, "classes", 10), opt_int(o, "embed", 4));
    static const long long ch[3] = {256, 128, 64}, ks[3] = {7, 4, 4}, st[3] = {1, 2, 2},
                           pd[3] = {0, 1, 1};
    for (int i = 0; i < 3; i++) {
        add(layers, conv("conv_transpose2d", ch[i], ks[i], st[i], pd[i], false));
        add(layers, ly("batchnorm"));
        add(layers, ly("relu"));
    }
    add(layers, conv("conv_transpose2d", opt_int(o, "channels", 1), 3, 1, 1, true));
    add(layers, ly("tanh"));
}

static void build_dcgan32(json_t *o, json_t *arch, json_t *layers)
{
    json_object_set_new(arch, "input", json_integer(opt_int(o, "latent", 100)));
    add_label(layers, opt_int(o, "classes", 0), opt_int(o, "embed", 0));
    long long w = opt_int(o, "width", 64);
    long long ch[3] = {4 * w, 2 * w, w}, ks[3] = {4, 4, 4}, st[3] = {1, 2, 2}, pd[3] = {0, 1, 1};
    for (int i = 0; i < 3; i++) {
        add(layers, conv("conv_transpose2d", ch[i], ks[i], st[i], pd[i], false));
        add(layers, ly("batchnorm"));
        add(layers, ly("relu"));
    }
    add(layers, conv("conv_transpose2d", opt_int(o, "channels", 3), 4, 2, 1, true));
    add(layers, ly("tanh"));
}

static int build_conv_small(json_t *o, json_t *arch, json_t *layers, pg_error *err)
{
    json_object_set_new(arch, "input", json_integer(opt_int(o, "latent", 10)));
    add_label(layers, opt_int(o, "classes", 10), 0);
    long long c1 = 16, c2 = 32, k = opt_int(o, "kernel", 5);
    json_t *ch = json_object_get(o, "channels");
    if (ch) {
        if (!json_is_array(ch) || json_array_size(ch) != 2)
            return pg_error_set(err, PG_EINVAL, "conv_small \"channels\" must be [c1, c2]");
        c1 = json_integer_value(json_array_get(ch, 0));
        c2 = json_integer_value(json_array_get(ch, 1));
    }
    if (k < 1 || k % 2 == 0)
        return pg_error_set(err, PG_EINVAL, "conv_small \"kernel\" must be odd");
    const char *mode = opt_str(o, "upsample", "bilinear");
    bool align = !strcmp(mode, "bilinear");
    add(layers, json_pack("{s:s,s:I}", "type", "linear", "out", opt_int(o, "hidden", 200)));
    add(layers, ly("batchnorm"));
    add(layers, ly("relu"));
    add(layers, json_pack("{s:s,s:I}", "type", "linear", "out", c1 * 49));
    add(layers, ly("batchnorm"));
    add(layers, json_pack("{s:s,s:[I,i,i]}", "type", "reshape", "shape", c1, 7, 7));
    json_t *up = json_pack("{s:s,s:i,s:s,s:b}", "type", "upsample", "factor", 2, "mode", mode,
                           "align_corners", align);
    add(layers, json_deep_copy(up));
    add(layers, conv("conv2d", c2, k, 1, (k - 1) / 2, true));
    add(layers, ly("relu"));
    add(layers, up);
    add(layers, conv("conv2d", opt_int(o, "out_channels", 1), k, 1, (k - 1) / 2, true));
    add(layers, ly("sigmoid"));
    return PG_OK;
}

int pg_nn_preset_arch(const char *name, const char *options_json, char **arch_json, pg_error *err)
{
    json_t *o = NULL;
    if (options_json && *options_json) {
        json_error_t je;
        o = json_loads(options_json, 0, &je);
        if (!json_is_object(o)) {
            json_decref(o);
            return pg_error_set(err, PG_EINVAL, "preset options must be a JSON object");
        }
    } else {
        o = json_object();
    }
    json_t *arch = json_object(), *layers = json_array();
    json_object_set_new(arch, "layers", layers);
    int rc = PG_OK;
    if (!name) name = "";
    if (!strcmp(name, "mlp"))
        rc = build_mlp(o, arch, layers, err);
    else if (!strcmp(name, "dcgan28"))
        build_dcgan28(o, arch, layers);
    else if (!strcmp(name, "dcgan32"))
        build_dcgan32(o, arch, layers);
    else if (!strcmp(name, "conv_small"))
        rc = build_conv_small(o, arch, layers, err);
    else
        rc = pg_error_set(err, PG_EINVAL,
                          "unknown preset \"%s\" (mlp, dcgan28, dcgan32, conv_small)", name);
    const char *init = json_string_value(json_object_get(o, "init"));
    if (!init && !strncmp(name, "dcgan", 5)) init = "dcgan";
    if (init) json_object_set_new(arch, "init", json_string(init));
    if (!rc) {
        *arch_json = json_dumps(arch, JSON_COMPACT | JSON_SORT_KEYS);
        if (!*arch_json) rc = pg_error_set(err, PG_ENOMEM, "cannot serialize the preset");
    }
    json_decref(arch);
    json_decref(o);
    return rc;
}

int pg_nn_create_preset(const char *name, const char *options_json, size_t max_batch, uint64_t seed,
                        pg_nn **out, pg_error *err)
{
    char *arch = NULL;
    int rc = pg_nn_preset_arch(name, options_json, &arch, err);
    if (rc) return rc;
    rc = pg_nn_create(arch, max_batch, seed, out, err);
    free(arch);
    return rc;
}
