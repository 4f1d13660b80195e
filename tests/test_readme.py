"""The README's quick start, as a new user runs it: the first command builds, verifies and
reports the shipped keyword spotter and prints what the README shows, line for line."""

from conftest import readme_sample


def test_quick_start_prints_what_the_readme_shows(shared_build):
    proc, _ = shared_build("model=models/kws.onnx", "verify")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
    printed = proc.stdout.splitlines()
    shown = readme_sample("The first command prints")
    assert len(shown) >= 5
    stale = [line for line in shown if line not in printed]
    assert not stale, "README's sample output is stale; the build prints:\n" + proc.stdout
    # and in the order the README shows
    assert [printed.index(line) for line in shown] == sorted(printed.index(line) for line in shown)
