"""``bgtrain serve``: the evaluator as an HTTP API for other programs.

Modules: ``app`` (the Starlette app: wildbg's ``/move`` and ``/eval``, bgtrain's ``/bgtrain/move`` and
``/bgtrain/eval``, the OpenAPI description), ``wildbg`` (wildbg's parameters and field names),
``batching`` (the async queue that evaluates concurrent requests together), ``openapi`` (the
description). Imports the core, ``cube`` and ``engine``; Starlette only here and in ``web``.
"""
