# Makes `import kernels` work from tests/ (pytest puts this folder on sys.path for its conftest).
# SPDX-License-Identifier: Apache-2.0
