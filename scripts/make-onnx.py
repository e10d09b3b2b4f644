#!/usr/bin/python3
"""Writes the small weightless ONNX files shardcost ships for tests and examples
(data/onnx/): ResNet-50 v1.5, ResNet-152 and VGG-16 (ImageNet, 224x224), a 3D U-Net (Cicek et al. 2016,
one channel of 128^3 voxels) and a small GPT (2 layers, 256 wide, 128 tokens).

Every weight is an initializer with its shape and no values (ONNX allows that; shape
inference needs only the shapes), so a file is a few kilobytes. The batch dimension is the
symbolic "N": shardcost sets it from the strategy's batch. Deterministic: the same onnx
package writes the same bytes (tests/e2e/onnx_files.sh checks the shipped files against it).

Usage: scripts/make-onnx.py [OUT_DIR]   (Debian: python3-onnx; default OUT_DIR data/onnx)
       scripts/make-onnx.py --test-cases tests/data/onnx   (the loader's odd and bad inputs)
"""
import os
import sys

from onnx import TensorProto, helper, save_model

OPSET = 17


class Builder:
    def __init__(self, name):
        self.name = name
        self.nodes = []
        self.inits = []
        self.count = 0

    def fresh(self, stem):
        self.count += 1
        return f"{stem}_{self.count}"

    def weight(self, stem, dims):
        # A weight with its shape and no values.
        t = TensorProto()
        t.name = self.fresh(stem)
        t.data_type = TensorProto.FLOAT
        t.dims.extend(dims)
        self.inits.append(t)
        return t.name

    def ints(self, stem, values):
        t = helper.make_tensor(self.fresh(stem), TensorProto.INT64, [len(values)], values)
        self.inits.append(t)
        return t.name

    def op(self, op_type, inputs, stem=None, **attrs):
        out = self.fresh(stem or op_type.lower())
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=out, **attrs))
        return out

    def conv(self, x, cin, cout, k, stride=1, pad=None, dims=2, bias=False, groups=1):
        pad = k // 2 if pad is None else pad
        w = self.weight("w", [cout, cin // groups] + [k] * dims)
        inputs = [x, w] + ([self.weight("b", [cout])] if bias else [])
        return self.op("Conv", inputs, "conv", kernel_shape=[k] * dims, strides=[stride] * dims,
                       pads=[pad] * (2 * dims), group=groups)

    def bn(self, x, c):
        params = [self.weight(s, [c]) for s in ("scale", "bias", "mean", "var")]
        return self.op("BatchNormalization", [x] + params, "bn", epsilon=1e-5)

    def model(self, inputs, output, out_shape):
        graph = helper.make_graph(self.nodes, self.name, inputs,
                                  [helper.make_tensor_value_info(output, TensorProto.FLOAT,
                                                                 out_shape)],
                                  initializer=self.inits)
        m = helper.make_model(graph, producer_name="shardcost scripts/make-onnx.py",
                              opset_imports=[helper.make_opsetid("", OPSET)])
        m.ir_version = 8
        return m


def image_input(channels, size, dims=2):
    return helper.make_tensor_value_info("input", TensorProto.FLOAT,
                                         ["N", channels] + [size] * dims)


def resnet50(name="resnet50", blocks_per_stage=(3, 4, 6, 3)):
    b = Builder(name)
    x = b.op("Relu", [b.bn(b.conv("input", 3, 64, 7, stride=2, pad=3), 64)])
    x = b.op("MaxPool", [x], "pool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = 64
    for stage, (width, blocks) in enumerate(zip([64, 128, 256, 512], blocks_per_stage)):
        for i in range(blocks):
            stride = 2 if (i == 0 and stage > 0) else 1
            out = width * 4
            # v1.5: the stride sits on the 3x3 convolution.
            y = b.op("Relu", [b.bn(b.conv(x, cin, width, 1), width)])
            y = b.op("Relu", [b.bn(b.conv(y, width, width, 3, stride=stride), width)])
            y = b.bn(b.conv(y, width, out, 1), out)
            short = x if i > 0 else b.bn(b.conv(x, cin, out, 1, stride=stride), out)
            x = b.op("Relu", [b.op("Add", [y, short])])
            cin = out
    x = b.op("Flatten", [b.op("GlobalAveragePool", [x], "gap")], axis=1)
    x = b.op("Gemm", [x, b.weight("fc_w", [1000, 2048]), b.weight("fc_b", [1000])], "fc",
             transB=1)
    return b.model([image_input(3, 224)], x, ["N", 1000])


def vgg16():
    b = Builder("vgg16")
    x, cin = "input", 3
    for width, convs in [(64, 2), (128, 2), (256, 3), (512, 3), (512, 3)]:
        for _ in range(convs):
            x = b.op("Relu", [b.conv(x, cin, width, 3, bias=True)])
            cin = width
        x = b.op("MaxPool", [x], "pool", kernel_shape=[2, 2], strides=[2, 2])
    x = b.op("Flatten", [x], axis=1)
    for i, (fin, fout) in enumerate([(25088, 4096), (4096, 4096), (4096, 1000)]):
        x = b.op("Gemm", [x, b.weight("fc_w", [fout, fin]), b.weight("fc_b", [fout])], "fc",
                 transB=1)
        if i < 2:
            x = b.op("Dropout", [b.op("Relu", [x])])
    return b.model([image_input(3, 224)], x, ["N", 1000])


def unet3d():
    # Cicek et al. 2016's 3D U-Net: two 3x3x3 convolutions with batch norm per level, 2x2x2
    # max pooling down, 2x2x2 transposed convolutions up, skips concatenated.
    b = Builder("unet3d")
    x, cin, skips = "input", 1, []
    widths = [32, 64, 128, 256]
    for level, w in enumerate(widths):
        for c in (w, w * 2 if level == len(widths) - 1 else w):
            x = b.op("Relu", [b.bn(b.conv(x, cin, c, 3, dims=3), c)])
            cin = c
        if level < len(widths) - 1:
            skips.append((x, cin))
            x = b.op("MaxPool", [x], "pool", kernel_shape=[2] * 3, strides=[2] * 3)
    for skip, skip_c in reversed(skips):
        w = b.weight("up_w", [cin, cin, 2, 2, 2])
        x = b.op("ConvTranspose", [x, w], "up", kernel_shape=[2] * 3, strides=[2] * 3)
        x = b.op("Concat", [skip, x], axis=1)
        cin += skip_c
        for _ in range(2):
            x = b.op("Relu", [b.bn(b.conv(x, cin, skip_c, 3, dims=3), skip_c)])
            cin = skip_c
    x = b.conv(x, cin, 3, 1, dims=3, bias=True)
    return b.model([image_input(1, 128, dims=3)], x, ["N", 3, 128, 128, 128])


def gpt_small():
    layers, width, heads, seq, vocab = 2, 256, 4, 128, 8192
    head = width // heads
    b = Builder("gpt-small")

    def norm(x):
        return b.op("LayerNormalization", [x, b.weight("ln_w", [width]),
                                           b.weight("ln_b", [width])], "ln", axis=-1)

    def linear(x, fin, fout):
        return b.op("Add", [b.op("MatMul", [x, b.weight("w", [fin, fout])], "mm"),
                            b.weight("b", [fout])])

    def split_heads(x):
        x = b.op("Reshape", [x, b.ints("shape", [0, 0, heads, head])])
        return b.op("Transpose", [x], perm=[0, 2, 1, 3])

    tokens = b.op("Gather", [b.weight("wte", [vocab, width]), "input"], "embed")
    x = b.op("Add", [tokens, b.weight("wpe", [seq, width])])
    for _ in range(layers):
        h = norm(x)
        q, k, v = (split_heads(linear(h, width, width)) for _ in range(3))
        scores = b.op("MatMul", [q, b.op("Transpose", [k], perm=[0, 1, 3, 2])], "scores")
        scores = b.op("Div", [scores, b.weight("scale", [1])])
        probs = b.op("Softmax", [scores], axis=-1)
        ctx = b.op("Transpose", [b.op("MatMul", [probs, v], "context")], perm=[0, 2, 1, 3])
        ctx = b.op("Reshape", [ctx, b.ints("shape", [0, 0, width])])
        x = b.op("Add", [x, linear(ctx, width, width)])
        h = b.op("Relu", [linear(norm(x), width, 4 * width)])
        x = b.op("Add", [x, linear(h, 4 * width, width)])
    logits = b.op("MatMul", [norm(x), b.weight("head", [width, vocab])], "head")
    inp = helper.make_tensor_value_info("input", TensorProto.INT64, ["N", seq])
    return b.model([inp], logits, ["N", seq, vocab])


def custom_op(value_info=True, symbolic=False):
    # Bad and odd inputs for the loader's tests: an operator of another domain (its output
    # shape given as value_info, or not), an input with a symbolic spatial size.
    b = Builder("custom-op")
    x = b.conv("input", 3, 8, 3)
    y = b.fresh("fancy")
    b.nodes.append(helper.make_node("FancyNorm", [x], [y], name=y, domain="com.example"))
    out = b.op("Relu", [y])
    dims = ["N", 3, "H", 32] if symbolic else ["N", 3, 32, 32]
    inp = helper.make_tensor_value_info("input", TensorProto.FLOAT, dims)
    m = b.model([inp], out, ["N", 8, 32, 32])
    if value_info:
        m.graph.value_info.append(
            helper.make_tensor_value_info(y, TensorProto.FLOAT, ["N", 8, 32, 32]))
    m.opset_import.append(helper.make_opsetid("com.example", 1))
    return m


def odd_shapes():
    # Operators the loader must read right: a batched weight (4 matrices of 16 x 32), a vector
    # weight, a Resize with an empty roi, a grouped convolution, and a skip from the model's
    # input to a later add (no cut may separate them in split learning).
    b = Builder("odd-shapes")
    x = b.conv("input", 4, 8, 3)
    x = b.op("Relu", [x])
    x = b.conv(x, 8, 8, 3, groups=4)
    x = b.op("Add", [x, b.conv("input", 4, 8, 1)])
    roi = helper.make_tensor(b.fresh("roi"), TensorProto.FLOAT, [0], [])
    scales = helper.make_tensor(b.fresh("scales"), TensorProto.FLOAT, [4], [1, 1, 1, 1])
    b.inits += [roi, scales]
    x = b.op("Resize", [x, roi.name, scales.name], mode="nearest")
    x = b.op("Reshape", [x, b.ints("shape", [0, 4, 32, 16])])
    x = b.op("MatMul", [x, b.weight("wb", [4, 16, 32])], "batched")
    x = b.op("MatMul", [x, b.weight("wv", [32])], "matvec")
    inp = helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 4, 16, 16])
    return b.model([inp], x, ["N", 4, 32])


def small_cnn(batch, baked=False):
    # A CNN as torch.onnx.export writes it: with a dynamic batch ("N"), or with the example
    # input's batch fixed (the exporter's default) and every intermediate tensor's shape stored
    # as value_info at that batch; `baked` flattens through a Reshape whose target holds the
    # batch as a constant, as constant folding writes x.view(x.size(0), -1).
    from onnx import shape_inference
    b = Builder("small-cnn")
    x = b.op("Relu", [b.bn(b.conv("input", 3, 16, 3), 16)])
    x = b.op("MaxPool", [x], "pool", kernel_shape=[2, 2], strides=[2, 2])
    x = b.op("Relu", [b.conv(x, 16, 32, 3, stride=2, bias=True)])
    x = b.op("GlobalAveragePool", [x], "gap")
    if baked:
        x = b.op("Reshape", [x, b.ints("shape", [batch, -1])])
    else:
        x = b.op("Flatten", [x], axis=1)
    x = b.op("Gemm", [x, b.weight("fc_w", [10, 32]), b.weight("fc_b", [10])], "fc", transB=1)
    inp = helper.make_tensor_value_info("input", TensorProto.FLOAT, [batch, 3, 32, 32])
    m = b.model([inp], x, [batch, 10])
    return m if batch == "N" else shape_inference.infer_shapes(m)


def vit_tiny(static=None):
    # A vision transformer as PyTorch's TorchScript exporter writes it in training mode: the
    # batch read back with Shape -> Gather -> Unsqueeze -> Concat into Reshape and Expand
    # targets (one through an integer Div, which ONNX's own data propagation does not follow),
    # Linear weights behind a Transpose (constant folding is off in training mode), one behind
    # an Identity and one behind a Cast to fp16, the class token concatenated before the
    # patches, a LayerScale gamma multiplied in, and GELU written out with scalar constants.
    # 32x32 images, 8x8 patches (16 of them), width 64, 4 heads, one block, 10 classes.
    b = Builder("vit-tiny")
    width, heads, patches, mlp = 64, 4, 16, 128

    def scalar(stem, value):
        t = helper.make_tensor(b.fresh(stem), TensorProto.FLOAT, [], [value])
        b.inits.append(t)
        return t.name

    def index(i):  # a scalar int64, as the exporter writes x.size(i)'s index
        t = helper.make_tensor(b.fresh("i"), TensorProto.INT64, [], [i])
        b.inits.append(t)
        return t.name

    def size(x, i):
        return b.op("Gather", [b.op("Shape", [x]), index(i)], axis=0)

    def linear(x, fin, fout, via="Transpose"):
        w = b.weight("w", [fout, fin])
        if via == "Transpose":
            wt = b.op("Transpose", [w], perm=[1, 0])
        elif via == "Identity":
            wt = b.op("Transpose", [b.op("Identity", [w])], perm=[1, 0])
        else:
            wt = b.op("Transpose", [b.op("Cast", [w], to=TensorProto.FLOAT16)], perm=[1, 0])
            x = b.op("Cast", [x], to=TensorProto.FLOAT16)
        y = b.op("Add", [b.op("MatMul", [x, wt], "mm"), b.weight("b", [fout])])
        if via == "Cast":
            y = b.op("Cast", [y], to=TensorProto.FLOAT)
        return y

    def norm(x):
        return b.op("LayerNormalization", [x, b.weight("ln_w", [width]),
                                           b.weight("ln_b", [width])], "ln", axis=-1)

    def gelu(x):
        inner = b.op("Erf", [b.op("Div", [x, scalar("sqrt2", 1.4142135)])])
        return b.op("Mul", [b.op("Mul", [x, scalar("half", 0.5)]),
                            b.op("Add", [inner, scalar("one", 1.0)])])

    x = b.conv("input", 3, width, 8, stride=8, pad=0, bias=True)
    n1 = b.op("Unsqueeze", [size(x, 0), b.ints("axes", [0])])
    target = b.op("Concat", [n1, b.ints("c", [width, -1])], axis=0)
    x = b.op("Transpose", [b.op("Reshape", [x, target])], perm=[0, 2, 1])
    token_shape = b.op("Concat", [n1, b.ints("one_d", [1, 1])], axis=0)
    token = b.op("Expand", [b.weight("class_token", [1, 1, width]), token_shape])
    x = b.op("Concat", [token, x], axis=1)
    x = b.op("Add", [x, b.weight("pos", [1, patches + 1, width])])
    h = norm(x)
    n = b.op("Unsqueeze", [size(h, 0), b.ints("axes", [0])])
    seq = b.op("Unsqueeze", [size(h, 1), b.ints("axes", [0])])
    chan = b.op("Unsqueeze", [size(h, 2), b.ints("axes", [0])])
    head_dim = b.op("Div", [chan, b.ints("heads", [heads])])
    split = b.op("Concat", [n, seq, b.ints("heads", [heads]), head_dim], axis=0)

    def heads_of(x):
        return b.op("Transpose", [b.op("Reshape", [x, split])], perm=[0, 2, 1, 3])

    q = heads_of(linear(h, width, width))
    k = heads_of(linear(h, width, width, via="Identity"))
    v = heads_of(linear(h, width, width))
    scores = b.op("MatMul", [q, b.op("Transpose", [k], perm=[0, 1, 3, 2])], "scores")
    probs = b.op("Softmax", [b.op("Div", [scores, scalar("scale", 4.0)])], axis=-1)
    ctx = b.op("Transpose", [b.op("MatMul", [probs, v], "context")], perm=[0, 2, 1, 3])
    merged = b.op("Concat", [n, seq, chan], axis=0)
    ctx = b.op("Reshape", [ctx, merged])
    x = b.op("Add", [x, b.op("Mul", [linear(ctx, width, width), b.weight("gamma", [width])])])
    y = linear(gelu(linear(norm(x), width, mlp, via="Cast")), mlp, width)
    x = b.op("Add", [x, b.op("Mul", [y, b.weight("gamma", [width])])])
    cls = b.op("Gather", [norm(x), index(0)], axis=1)
    x = b.op("Gemm", [cls, b.weight("head_w", [10, width]), b.weight("head_b", [10])], "head",
             transB=1)
    batch = "batch_size" if static is None else static
    inp = helper.make_tensor_value_info("input", TensorProto.FLOAT, [batch, 3, 32, 32])
    return b.model([inp], x, [batch, 10])


def computed_weight():
    # A weight computed in the graph (scaled before use), which the loader cannot follow to an
    # initializer: priced, and said.
    b = Builder("computed-weight")
    w = b.op("Mul", [b.weight("w", [8, 4]), b.weight("scale", [1])])
    x = b.op("MatMul", ["input", w], "mm")
    inp = helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 8])
    return b.model([inp], x, ["N", 4])


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--test-cases":
        out = sys.argv[2]
        models = [("custom-op", custom_op), ("no-shape", lambda: custom_op(False)),
                  ("symbolic-dim", lambda: custom_op(True, True)), ("odd-shapes", odd_shapes),
                  ("cnn-dynamic", lambda: small_cnn("N")), ("cnn-static1", lambda: small_cnn(1)),
                  ("cnn-static8", lambda: small_cnn(8, baked=True)), ("vit-tiny", vit_tiny),
                  ("computed-weight", computed_weight)]
    else:
        out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
            os.path.dirname(os.path.abspath(__file__)), "..", "data", "onnx")
        models = [("resnet50", resnet50), ("vgg16", vgg16), ("unet3d", unet3d),
                  ("gpt-small", gpt_small),
                  ("resnet152", lambda: resnet50("resnet152", (3, 8, 36, 3)))]
    os.makedirs(out, exist_ok=True)
    for name, make in models:
        path = os.path.join(out, name + ".onnx")
        save_model(make(), path)
        print(f"make-onnx.py: wrote {os.path.normpath(path)} ({os.path.getsize(path)} bytes)")


if __name__ == "__main__":
    main()
