"""The engine platform; its worker also runs the schedule trigger workflow and activity."""

from tests.engine.conftest import platform  # noqa: F401
