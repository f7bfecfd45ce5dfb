"""The tensor backends every chapter-2 tensor test runs on: chapter 3 appends its fast backends here."""
import pytest

from minitorch import FastBackend, SimpleBackend

BACKENDS = [pytest.param(SimpleBackend, id="simple"), pytest.param(FastBackend, id="fast")]
