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
    """CI runs the README's two commands: the install + main job as written, and the test command once (CI may
    only append options, e.g. ``--durations=25``), after pointing the kernel caches into its checkout."""
    ci = (Path(__file__).resolve().parents[1] / ".ci" / "run").read_text()
    commands = re.findall(r"```bash\n(.*?)```", README, re.S)[0]
    main_job, tests = [line.split("  #")[0].strip() for line in commands.strip().splitlines()]
    lines = [line.strip() for line in ci.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    assert "mbkron simulate models/" in main_job and main_job in lines, (main_job, lines)
    assert tests.startswith("python -m pytest")
    runs = [line for line in lines if "pytest" in line]
    assert len(runs) == 1 and runs[0].startswith(tests + " ") and "--durations=25" in runs[0], runs
    exports = [k for k, line in enumerate(lines) if line.startswith("export ") and "NUMBA_CACHE_DIR=" in line
               and "MBKRON_CACHE_DIR=" in line]
    assert exports and exports[0] < lines.index(main_job), "`.ci/run` must set the kernel caches before installing"
