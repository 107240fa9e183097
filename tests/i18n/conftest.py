# The access matrix's world (tests/test_access.py): every page, with something on it.
from tests.test_access import world  # noqa: F401
