"""The native part of the package; everything else is in pyproject.toml.

``bgtrain.model._fast_encoders`` is the encoders' CPU fast path (``bgtrain.model.fast_encoders``). It is optional:
without a C compiler the build goes on and the encoders use their torch code.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "bgtrain.model._fast_encoders",
            ["bgtrain/model/_fast_encoders.c"],
            # No fused multiply-add and no -ffast-math: the float32 units must equal the torch code's bit for
            # bit. -O3 measured 5% faster than -O2.
            extra_compile_args=["-O3", "-ffp-contract=off", "-std=c11"],
            extra_link_args=["-pthread"],
            optional=True,
        )
    ]
)
