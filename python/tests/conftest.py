# pytest setup: the libraries of the build tree, a private compile cache, the devices to test.
# SPDX-License-Identifier: Apache-2.0
import os
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
os.environ.setdefault("TL_LIB_DIR", str(ROOT / "build" / "lib"))

import pytest  # noqa: E402


@pytest.fixture(autouse=True, scope="session")
def _cache_dir(tmp_path_factory):
    os.environ["TL_CACHE_DIR"] = str(tmp_path_factory.mktemp("tl-cache"))
    os.environ["TL_PROFILE_REPORT"] = "0"
