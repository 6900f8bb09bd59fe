"""The README's example and quick-start commands stay true."""

import re
from pathlib import Path

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()


def test_readme_python_example_runs():
    blocks = re.findall(r"```python\n(.*?)```", README, re.S)
    assert blocks, "the README must show a Python example"
    namespace: dict = {}
    exec(compile(blocks[0], "README.md", "exec"), namespace)  # noqa: S102 - our own documentation
    assert namespace["run"].success and namespace["model"].bodies == ("upper_arm", "forearm", "hand")


def test_quick_start_matches_ci():
    ci = (Path(__file__).resolve().parents[1] / ".ci" / "run").read_text()
    commands = re.findall(r"```bash\n(.*?)```", README, re.S)[0]
    main_job, tests = [line.split("  #")[0].strip() for line in commands.strip().splitlines()]
    assert main_job in ci and "mbkron simulate models/" in main_job
    assert tests.startswith("python -m pytest") and "python -m pytest" in ci
