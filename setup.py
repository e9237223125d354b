"""Package discovery that pyproject.toml cannot say: every package under router/, found
rather than listed (a list misses the next new subpackage), plus `models/` (the manifest of
known models) shipped inside the package as `router.models`. Everything else is in
pyproject.toml."""

from setuptools import find_packages, setup

setup(
    packages=[*find_packages(include=["router", "router.*"]), "router.models"],
    package_dir={"router.models": "models"},
)
