"""The README's Python example runs as printed (the first ```python block of its "Python"
section), so a newcomer's first lines work."""

from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_readme_python_example_runs():
    pytest.importorskip("xarray")
    if not README.exists():
        pytest.skip("README.md is not beside the package (installed from a wheel elsewhere)")
    text = README.read_text()
    section = text[text.index("\n## Python\n"):]
    start = section.index("```python\n") + len("```python\n")
    code = section[start:section.index("```", start)]
    assert "NeighborIndex" in code and "OrdinaryKriging" in code
    scope = {}
    exec(compile(code, "README.md (Python example)", "exec"), scope)
    assert scope["d"].shape == (10, 8) and scope["i"].shape == (10, 8)
    assert scope["zz"].shape == (100, 100) and scope["ss"].shape == (100, 100)
    assert "spatial_ref" in scope["ds"].coords
