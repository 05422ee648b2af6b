"""Built-in models: small, download-free networks written with `tvm.relax.frontend.nn`.

Every function returns a plain `tvm.IRModule` whose entry function is `forward`.
Weights are function parameters after the inputs (the `num_input` attribute says how many
leading parameters are inputs), exactly as `nn.Module.export_tvm` produces them, so a
build never spends time folding large constants.

Examples
--------
>>> import passlab
>>> mod = passlab.models.mlp()
>>> [gv.name_hint for gv in mod.get_global_vars()]
['forward']
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["mlp", "resnet", "mobilenet", "transformer", "with_constant_weights", "by_name", "NAMES"]


def _nn() -> Any:
    from tvm.relax.frontend import nn

    return nn


def mlp(batch: int = 4, features: int = 16, hidden: int = 32, classes: int = 8):
    """A two-layer perceptron `Linear -> ReLU -> Linear` with hand-computable sizes.

    With the defaults every tensor is float32: the input is 4x16 (256 B), the hidden
    activations 4x32 (512 B) and the output 4x8 (128 B).
    """
    nn = _nn()

    class MLP(nn.Module):
        def __init__(self):
            self.fc1 = nn.Linear(features, hidden)
            self.fc2 = nn.Linear(hidden, classes)

        def forward(self, x):
            return self.fc2(nn.relu(self.fc1(x)))

    spec = {"forward": {"x": nn.spec.Tensor((batch, features), "float32")}}
    mod, _ = MLP().export_tvm(spec=spec)
    return mod


def resnet(
    batch: int = 1,
    image: int = 32,
    width: int = 16,
    blocks: tuple[int, ...] = (2, 2, 2, 2),
    classes: int = 10,
):
    """A ResNet-18-style CNN: conv stem, four stages of basic blocks with batch norm,
    global average pooling and a linear classifier.

    The defaults keep ResNet-18's depth (2, 2, 2, 2 basic blocks, 20 convolutions with the
    downsampling shortcuts) at a small width and image size so that a CPU build stays quick.
    """
    nn = _nn()
    from tvm import relax
    from tvm.relax.frontend.nn import op

    BatchNorm2d = _batch_norm_class()

    def conv(cin: int, cout: int, k: int, stride: int = 1):
        return nn.Conv2D(cin, cout, k, stride=stride, padding=k // 2, bias=False)

    class BasicBlock(nn.Module):
        def __init__(self, cin: int, cout: int, stride: int):
            self.conv1 = conv(cin, cout, 3, stride)
            self.bn1 = BatchNorm2d(cout)
            self.conv2 = conv(cout, cout, 3)
            self.bn2 = BatchNorm2d(cout)
            self.down = None
            if stride != 1 or cin != cout:
                self.down = conv(cin, cout, 1, stride)
                self.down_bn = BatchNorm2d(cout)

        def forward(self, x):
            y = nn.relu(self.bn1(self.conv1(x)))
            y = self.bn2(self.conv2(y))
            short = x if self.down is None else self.down_bn(self.down(x))
            return nn.relu(y + short)

    class ResNet(nn.Module):
        def __init__(self):
            self.stem = conv(3, width, 3)
            self.stem_bn = BatchNorm2d(width)
            layers, cin = [], width
            for i, n in enumerate(blocks):
                cout = width * 2**i
                for j in range(n):
                    layers.append(BasicBlock(cin, cout, 2 if (j == 0 and i > 0) else 1))
                    cin = cout
            self.layers = nn.ModuleList(layers)
            self.fc = nn.Linear(cin, classes)

        def forward(self, x):
            x = nn.relu(self.stem_bn(self.stem(x)))
            for layer in self.layers:
                x = layer(x)
            pooled = op.wrap_nested(relax.op.nn.adaptive_avg_pool2d(x._expr, 1), "pool")
            flat = op.reshape(pooled, (batch, -1))
            return self.fc(flat)

    spec = {"forward": {"x": nn.spec.Tensor((batch, 3, image, image), "float32")}}
    mod, _ = ResNet().export_tvm(spec=spec)
    return mod


def _batch_norm_class():
    """An inference-mode `R.nn.batch_norm` as an nn.Module (nn has none built in)."""
    nn = _nn()
    from tvm import relax
    from tvm.relax.frontend.nn import op

    class BatchNorm2d(nn.Module):
        def __init__(self, channels: int):
            self.weight = nn.Parameter((channels,), "float32")
            self.bias = nn.Parameter((channels,), "float32")
            self.running_mean = nn.Parameter((channels,), "float32")
            self.running_var = nn.Parameter((channels,), "float32")

        def forward(self, x):
            expr = relax.op.nn.batch_norm(
                x._expr, self.weight._expr, self.bias._expr,
                self.running_mean._expr, self.running_var._expr,
                axis=1, epsilon=1e-5, training=False,
            )
            return op.wrap_nested(relax.TupleGetItem(expr, 0), "batch_norm")

    return BatchNorm2d


#: MobileNetV2's inverted-residual settings: (expansion t, channels c, repeats n, stride s).
_MOBILENET_V2 = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                 (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1))


def mobilenet(batch: int = 1, image: int = 224, width: float = 1.0, classes: int = 1000):
    """MobileNetV2 (inverted residuals, depthwise convolutions, ReLU6, batch norm): the
    "larger model" of the benchmarks, 52 convolutions and about 150 operator calls."""
    nn = _nn()
    from tvm import relax
    from tvm.relax.frontend.nn import op

    BatchNorm2d = _batch_norm_class()

    def ch(c: int) -> int:
        return max(8, int(c * width + 4) // 8 * 8)

    class ConvBN(nn.Module):
        def __init__(self, cin, cout, k, stride=1, groups=1, act=True):
            self.conv = nn.Conv2D(cin, cout, k, stride=stride, padding=k // 2, groups=groups,
                                  bias=False)
            self.bn = BatchNorm2d(cout)
            self.act = act

        def forward(self, x):
            y = self.bn(self.conv(x))
            return op.wrap_nested(relax.op.clip(y._expr, 0.0, 6.0), "relu6") if self.act else y

    class InvertedResidual(nn.Module):
        def __init__(self, cin, cout, stride, t):
            hidden = cin * t
            layers = [ConvBN(cin, hidden, 1)] if t != 1 else []
            layers += [ConvBN(hidden, hidden, 3, stride, groups=hidden),
                       ConvBN(hidden, cout, 1, act=False)]
            self.layers = nn.ModuleList(layers)
            self.residual = stride == 1 and cin == cout

        def forward(self, x):
            y = x
            for layer in self.layers:
                y = layer(y)
            return x + y if self.residual else y

    class MobileNetV2(nn.Module):
        def __init__(self):
            cin = ch(32)
            self.stem = ConvBN(3, cin, 3, 2)
            blocks = []
            for t, c, n, s in _MOBILENET_V2:
                for i in range(n):
                    blocks.append(InvertedResidual(cin, ch(c), s if i == 0 else 1, t))
                    cin = ch(c)
            self.blocks = nn.ModuleList(blocks)
            self.head = ConvBN(cin, 1280, 1)
            self.fc = nn.Linear(1280, classes)

        def forward(self, x):
            x = self.stem(x)
            for b in self.blocks:
                x = b(x)
            x = self.head(x)
            pooled = op.wrap_nested(relax.op.nn.adaptive_avg_pool2d(x._expr, 1), "pool")
            return self.fc(op.reshape(pooled, (batch, -1)))

    spec = {"forward": {"x": nn.spec.Tensor((batch, 3, image, image), "float32")}}
    mod, _ = MobileNetV2().export_tvm(spec=spec)
    return mod


def transformer(
    layers: int = 2,
    seq_len: int | str = 16,
    hidden: int = 64,
    heads: int = 4,
    ffn: int = 128,
    vocab: int = 128,
    batch: int = 1,
):
    """A small decoder-only transformer: token embedding, `layers` pre-norm blocks of
    RMSNorm, causal multi-head attention and a SwiGLU MLP, a final RMSNorm and LM head.

    Pass `seq_len="n"` (any string) for the dynamic-shape variant: the sequence length
    becomes the symbolic variable of that name.
    """
    nn = _nn()
    from tvm.relax.frontend.nn import op

    head_dim = hidden // heads
    if head_dim * heads != hidden:
        raise ValueError(f"hidden={hidden} must be a multiple of heads={heads}")

    class Attention(nn.Module):
        def __init__(self):
            self.qkv = nn.Linear(hidden, 3 * hidden, bias=False)
            self.out = nn.Linear(hidden, hidden, bias=False)

        def forward(self, x):
            b, s, _ = x.shape
            qkv = op.reshape(self.qkv(x), (b, s, 3, heads, head_dim))
            q, k, v = op.split(qkv, 3, axis=2)
            q, k, v = (op.squeeze(t, axis=2) for t in (q, k, v))
            attn = op.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.out(op.reshape(attn, (b, s, hidden)))

    class SwiGLU(nn.Module):
        def __init__(self):
            self.gate = nn.Linear(hidden, ffn, bias=False)
            self.up = nn.Linear(hidden, ffn, bias=False)
            self.down = nn.Linear(ffn, hidden, bias=False)

        def forward(self, x):
            return self.down(op.silu(self.gate(x)) * self.up(x))

    class Block(nn.Module):
        def __init__(self):
            self.norm1 = nn.RMSNorm(hidden, axes=-1, bias=False)
            self.attn = Attention()
            self.norm2 = nn.RMSNorm(hidden, axes=-1, bias=False)
            self.mlp = SwiGLU()

        def forward(self, x):
            x = x + self.attn(self.norm1(x))
            return x + self.mlp(self.norm2(x))

    class Decoder(nn.Module):
        def __init__(self):
            self.embed = nn.Embedding(vocab, hidden)
            self.blocks = nn.ModuleList([Block() for _ in range(layers)])
            self.norm = nn.RMSNorm(hidden, axes=-1, bias=False)
            self.head = nn.Linear(hidden, vocab, bias=False)

        def forward(self, tokens):
            x = self.embed(tokens)
            for block in self.blocks:
                x = block(x)
            return self.head(self.norm(x))

    spec = {"forward": {"tokens": nn.spec.Tensor((batch, seq_len), "int32")}}
    mod, _ = Decoder().export_tvm(spec=spec)
    return mod


def with_constant_weights(mod, seed: int = 0, function: str = "forward"):
    """Bind random weights into `mod` as constants (every parameter after the
    `num_input` inputs), as a model loaded with its weights would be.

    FoldConstant then has real work to do: it runs a whole TIR build inside itself,
    which the recorder shows as inner steps.
    """
    import numpy as np
    import tvm
    from tvm import relax

    func = mod[function]
    n_in = int(func.attrs["num_input"]) if func.attrs and "num_input" in func.attrs else 1
    rng = np.random.default_rng(seed)
    params = {}
    for p in func.params[n_in:]:
        shape = [int(d) for d in p.ty.shape.values]
        lo, hi = (0.5, 1.5) if "var" in p.name else (-1.0, 1.0)
        params[p.name] = tvm.runtime.tensor(rng.uniform(lo, hi, size=shape).astype(str(p.ty.dtype)))
    return relax.transform.BindParams(function, params)(mod)


_BUILTIN: dict[str, Callable] = {
    "mlp": mlp,
    "resnet": resnet,
    "transformer": transformer,
    "transformer-dynamic": lambda: transformer(seq_len="n"),
    "mobilenet": mobilenet,
}
NAMES: tuple[str, ...] = tuple(_BUILTIN)


def by_name(name: str):
    """Return the built-in model called `name` (one of `NAMES`) as an IRModule."""
    try:
        factory = _BUILTIN[name]
    except KeyError:
        from passlab.errors import unknown

        raise unknown("model", name, NAMES) from None
    return factory()
