"""Sessions: ``tests`` (CPU through the interpreter, or full size on a GPU), ``docs``, ``lint``;
``bench``, ``profiles``, ``measuring``, ``first_call`` and ``versus_compile`` need a GPU.

Run ``nox --no-venv --no-install -s SESSION`` to use an environment that already holds
everything (for example a GPU machine's own torch); plain ``nox -s SESSION`` builds one.
"""

from __future__ import annotations

import os
import shlex

import nox

nox.options.sessions = ["lint", "tests", "docs"]
nox.options.reuse_venv = "yes"
PYPROJECT = nox.project.load_toml("pyproject.toml")
HTML = "docs/_build/html"


def install(session: nox.Session, *groups: str) -> None:
    """The package (editable) and the dependency groups named, unless running without a venv.

    ``TRITONPERF_TORCH``, when set, holds pip arguments for installing torch first (a version, an index).
    """
    if isinstance(session.virtualenv, nox.virtualenv.PassthroughEnv):
        session.env["PYTHONPATH"] = os.pathsep.join(filter(None, ["src", os.environ.get("PYTHONPATH")]))
        return
    torch = os.environ.get("TRITONPERF_TORCH")
    if torch:
        # Installed before the package, whose "torch>=2.4" it then satisfies: a machine without a GPU can take
        # torch's CPU build instead of the CUDA build that PyPI serves (with it, about 2 GB an environment, not 5.6).
        session.install(*shlex.split(torch))
    session.install("-e", ".", *nox.project.dependency_groups(PYPROJECT, *groups))


@nox.session
def tests(session: nox.Session) -> None:
    """The test suite: in the interpreter at small sizes without a GPU, at full size with one."""
    install(session, "test")
    session.run("python", "-m", "tritonperf", "info", "--no-ceilings")
    session.run("pytest", "tests", "--ignore=tests/site", *session.posargs)


@nox.session
def docs(session: nox.Session) -> None:
    """Build the site (warnings are errors), then open it in headless Chromium and check it."""
    install(session, "docs")
    session.run("sphinx-build", "-n", "-W", "--keep-going", "-b", "html", "docs", HTML, *session.posargs)
    session.log(f"site built: {HTML}/index.html")
    session.run("pytest", "tests/site", "-p", "no:cacheprovider", env={"TRITONPERF_SITE_CHECK": "required"})


@nox.session
def bench(session: nox.Session) -> None:
    """Benchmark every kernel on this machine's GPU and write docs/results/<gpu>.json."""
    install(session)
    session.run(
        "python", "-c",
        "import sys, torch; torch.cuda.is_available() or sys.exit("
        "'nox -s bench needs a CUDA GPU: none is visible to torch, so nothing was measured')",
    )
    session.run("python", "-m", "tritonperf", "bench", "--out", "docs/results/", *session.posargs)


@nox.session
def profiles(session: nox.Session) -> None:
    """Record the PyTorch profiler's, proton's and Nsight Compute's output for the profiling chapter (GPU only)."""
    install(session)
    if not isinstance(session.virtualenv, nox.virtualenv.PassthroughEnv):
        session.install("llnl-hatchet")  # proton-viewer reads proton's .hatchet files with it
    session.run("python", "tools/record_profiles.py", "--out", "docs/results/profiles", *session.posargs)


@nox.session
def measuring(session: nox.Session) -> None:
    """Record how much the usual timing mistakes change a measurement, for the measuring chapter (GPU only)."""
    install(session)
    session.run("python", "tools/record_measuring.py", "--out", "docs/results/measuring",
                "--order-out", "docs/results/measuring_order", *session.posargs)


@nox.session
def first_call(session: nox.Session) -> None:
    """Record what the autotuned matmul's first call costs, cold and with the cache kept (GPU only)."""
    install(session)
    session.run("python", "tools/record_first_call.py", "--out", "docs/results/first_call", *session.posargs)


@nox.session
def versus_compile(session: nox.Session) -> None:
    """Record the norm forwards' configurations against torch.compile, for the layer-norm lesson (GPU only)."""
    install(session)
    session.run("python", "tools/record_versus_compile.py", "--out", "docs/results/versus_compile", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff over the package, tests, examples and docs configuration."""
    if not isinstance(session.virtualenv, nox.virtualenv.PassthroughEnv):
        session.install(*nox.project.dependency_groups(PYPROJECT, "lint"))
    session.run("ruff", "check", "src", "tests", "examples", "tools", "docs/conf.py", "noxfile.py")
