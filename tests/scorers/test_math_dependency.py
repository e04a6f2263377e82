"""A missing math-verify fails when the env is built, with what to install (issue 12.15),
instead of every correct answer silently scoring 0."""

from __future__ import annotations

import subprocess
import sys


def test_math_env_without_math_verify_fails_at_build_with_an_install_hint():
    code = (
        "import sys; sys.modules['math_verify'] = None\n"
        "from skyeval import SkyEnvBuilder\n"
        "from skyeval.errors import MissingDependencyError\n"
        "try:\n"
        "    SkyEnvBuilder.build('math500')\n"
        "except Exception as err:\n"
        "    chain = [err, err.__cause__]\n"
        "    found = [e for e in chain if isinstance(e, MissingDependencyError)]\n"
        "    print(found[0] if found else f'WRONG {err!r}')\n"
        "else:\n"
        "    print('BUILT')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "math_verify" in out and "pip install" in out and "WRONG" not in out and "BUILT" not in out


def test_require_math_verify_imports_nothing_heavy():
    code = (
        "import sys\n"
        "from skyeval.scorers.math import require_math_verify\n"
        "require_math_verify()\n"
        "assert 'math_verify' not in sys.modules and 'sympy' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
