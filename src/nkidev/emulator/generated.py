"""Functions generated from a signature: the public nki.isa functions (opdef) and nl's exact guards (language).

A generated function has its model's very parameters and default objects, so `inspect.signature` and `is`
tests on defaults see the same thing, and a call binds its arguments in C (no *args/**kwargs to pack). Its
file name starts with "<nki.", which kernel_location treats as nkidev's own frame, so errors name the kernel line.
"""

from __future__ import annotations

from collections.abc import Callable


def parameter_list(params: list, scope: dict) -> str:
    """The parameter list of a def with `params`' names, kinds and defaults ("a, b=_d1, *, c=_d2"); each default
    object goes into `scope` as _d<index>, where the generated body may test it with `is`."""
    head, keyword_only = [], False
    for i, p in enumerate(params):
        if p.kind is p.KEYWORD_ONLY and not keyword_only:
            head.append("*")
            keyword_only = True
        if p.default is p.empty:
            head.append(p.name)
        else:
            scope[f"_d{i}"] = p.default
            head.append(f"{p.name}=_d{i}")
    return ", ".join(head)


def define(name: str, src: str, namespace: str, scope: dict) -> Callable:
    """Compile `src` (a def of `name`) as nki.`namespace`.`name` with `scope` as its globals; returns the function."""
    exec(compile(src, f"<nki.{namespace}.{name}>", "exec"), scope)  # noqa: S102 - generated from our own signatures
    return scope.pop(name)
