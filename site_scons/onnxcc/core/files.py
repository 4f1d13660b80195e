"""Writing stage outputs so that a failed stage leaves nothing half-written behind."""

import contextlib
import os
import shutil
import tempfile


@contextlib.contextmanager
def staged_outputs(paths):
    """Yield temporary paths (same base names, in one scratch folder beside the first
    output); move them onto ``paths`` only when the block succeeds."""
    paths = [os.path.abspath(p) for p in paths]
    folder = os.path.dirname(paths[0])
    os.makedirs(folder, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix=".staging-", dir=folder)
    try:
        staged = [os.path.join(scratch, os.path.basename(p)) for p in paths]
        yield staged
        for tmp, final in zip(staged, paths):
            os.makedirs(os.path.dirname(final), exist_ok=True)
            os.replace(tmp, final)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def write_text(path, text):
    with staged_outputs([path]) as (tmp,):
        with open(tmp, "w", newline="\n") as f:
            f.write(text)


def write_files(files):
    """Write several files together: all of them or none. Each is text (a str) or binary:
    a list of bytes-like pieces, written one after the other."""
    paths = list(files)
    with staged_outputs(paths) as staged:
        for tmp, path in zip(staged, paths):
            content = files[path]
            if isinstance(content, str):
                with open(tmp, "w", newline="\n") as f:
                    f.write(content)
            else:
                with open(tmp, "wb") as f:
                    for piece in content:
                        f.write(piece)


def write_texts(files):
    """Write several text files together: all of them or none."""
    write_files(files)


def remove_empty_dirs(top):
    """Remove ``top`` and the folders below it that hold no file (after a failed build)."""
    for folder, _, _ in sorted(os.walk(top), key=lambda w: -len(w[0])):
        try:
            os.rmdir(folder)
        except OSError:
            pass  # not empty
