# Errors of the tl package: compile errors that name the kernel's Python line, runtime errors.
# SPDX-License-Identifier: Apache-2.0
import re


class CompileError(Exception):
    """A kernel that cannot be compiled: the message starts with ``file:line:col: error:``.

    ``filename``, ``lineno`` and ``col`` name the Python source position (when known).
    """

    _LOC = re.compile(r"^(?P<file>.+?):(?P<line>\d+):(?P<col>\d+): error: ")

    def __init__(self, message):
        super().__init__(message)
        m = self._LOC.match(message)
        self.filename = m.group("file") if m else None
        self.lineno = int(m.group("line")) if m else None
        self.col = int(m.group("col")) if m else None


class RuntimeError_(RuntimeError):
    """A HAL call failed (no such device, a failed device_assert, ...)."""

    def __init__(self, message, code=None):
        super().__init__(message)
        self.code = code


TLRuntimeError = RuntimeError_
