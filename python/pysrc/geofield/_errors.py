"""The exceptions geofield raises. Each also derives from the built-in a caller would catch."""


class GeofieldError(Exception):
    """Base class of every error geofield raises (the library's message, unchanged)."""


class GeofieldValueError(GeofieldError, ValueError):
    """A bad argument or input value: names the argument (and the first bad index)."""


class GeofieldIOError(GeofieldError, OSError):
    """A file that cannot be read or written: names the file (and line and field)."""


class GeofieldRuntimeError(GeofieldError, RuntimeError):
    """The device failed, or a combination the chosen backend cannot compute."""
