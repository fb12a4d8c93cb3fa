"""Errors the CLI turns into one `harness: error: ...` line and an exit code."""

from __future__ import annotations


class HarnessError(Exception):
    """An error with a message meant for the user and the exit code it maps to."""

    exit_code = 1


class BadInput(HarnessError):
    """The user asked for something that does not exist or is out of range."""

    exit_code = 2


class LockHeld(HarnessError):
    """Another `harness run` or `harness bench` is running on this machine."""

    exit_code = 3
