"""`nki.typing`: annotation placeholders (`nt.tensor[shape, dtype]`), accepted and ignored."""

from __future__ import annotations


class _Annotation:
    def __class_getitem__(cls, item):
        return cls


class tensor(_Annotation):  # noqa: N801 - NKI's spelling
    """An input tensor annotation."""


class mutable_tensor(_Annotation):  # noqa: N801
    """An input tensor the kernel may write."""


class scalar(_Annotation):  # noqa: N801
    """A compile-time scalar annotation."""


float = scalar  # noqa: A001 - NKI's spelling
int = scalar  # noqa: A001
