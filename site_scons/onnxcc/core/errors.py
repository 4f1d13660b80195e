"""The one error type of onnxcc: a message a user can act on."""


class OnnxccError(Exception):
    """What failed, where (file, node, op) and what to do, in one line.

    Every stage raises this for bad input; the command line and the SCons tool print
    ``str(error)`` as a single line and exit non-zero, never a traceback.
    """

    def __init__(self, message, *, where=None, hint=None):
        self.message = message
        self.where = where
        self.hint = hint
        super().__init__(str(self))

    def __str__(self):
        text = f"{self.where}: {self.message}" if self.where else self.message
        return one_line(f"{text} ({self.hint})" if self.hint else text)


def one_line(text):
    """``text`` with its unprintable characters (newlines, control and direction marks) as
    escapes: a message (or a progress line) stays one honest line whatever model names or
    file names it quotes."""
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii")
                   for ch in text)
