"""The tenant a unit of work acts for, as defence in depth for row-level security."""

from contextlib import contextmanager
from contextvars import ContextVar

current_tenant: ContextVar[str | None] = ContextVar("funes_current_tenant", default=None)


@contextmanager
def acting_for(tenant: str | None):
    token = current_tenant.set(tenant)
    try:
        yield
    finally:
        current_tenant.reset(token)
