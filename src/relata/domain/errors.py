"""The one error tree of Relata.

Every failure a caller may need to tell apart is a subclass of ``RelataError``; library
exceptions are converted at the adapter edge (``raise X from exc``). HTTP statuses are
chosen in exactly one place, ``relata.api.errors``.

    RelataError
    ├── ConfigError              a setting has a bad value (start-up stops)
    ├── ValidationError          caller input is wrong; names the field
    │   ├── UnsupportedContent   upload content type rejected (415)
    │   ├── TooLarge             request body or upload over a size limit (413)
    │   └── TooSlow              request body arriving slower than the least rate (408)
    ├── NotFound                 missing, or in another workspace (indistinguishable)
    ├── Conflict
    │   ├── DuplicateItem        same bytes already live in the workspace
    │   ├── DuplicateKey         any other unique constraint
    │   └── LeaseLost            a job's lease is no longer ours
    ├── MissingWorkspace         a repository call without a workspace (a programming error)
    ├── Unavailable              a dependency is down or overloaded (503)
    │   ├── Overloaded           admission control refused the request
    │   └── Busy                 the database stayed locked past the busy timeout, or a
    │                            transaction lost a lock/serialization race (retry)
    ├── NotConfigured            a feature's requirement is not configured here (no model):
    │                            a pipeline stage that needs it is skipped, never retried
    └── Permanent                an operation that must not be retried
"""

from __future__ import annotations


class RelataError(Exception):
    """Root of every error Relata raises on purpose."""

    code = "internal"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code


class ConfigError(RelataError):
    code = "config_error"


class ValidationError(RelataError):
    code = "invalid_request"

    def __init__(self, message: str, *, field: str | None = None, code: str | None = None) -> None:
        super().__init__(message, code=code)
        self.field = field


class UnsupportedContent(ValidationError):
    code = "unsupported_content"


class TooLarge(ValidationError):
    """The request body or upload is over a size limit; the message names the limit."""

    code = "too_large"


class TooSlow(ValidationError):
    """The request body arrives slower than the least rate it must keep; names the rate."""

    code = "too_slow"


class NotFound(RelataError):
    code = "not_found"


class Unauthenticated(RelataError):
    """No valid credentials: no session or token, or one that expired or was revoked (401).
    The message never says which, so it cannot be used to probe tokens."""

    code = "unauthorized"


class Forbidden(RelataError):
    """The principal is a member of the workspace but its role does not allow the action,
    or a cookie-authenticated write lacks its CSRF token (403). Never used for a workspace
    the principal is not a member of: that is ``NotFound``."""

    code = "forbidden"


class RateLimited(RelataError):
    """Too many failed sign-ins for this account or client address (429)."""

    code = "rate_limited"

    def __init__(self, message: str, *, retry_after: int | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class Conflict(RelataError):
    code = "conflict"


class DuplicateItem(Conflict):
    code = "duplicate_item"

    def __init__(self, message: str, *, existing_id: str | None = None) -> None:
        super().__init__(message)
        self.existing_id = existing_id


class DuplicateKey(Conflict):
    code = "duplicate_key"

    def __init__(self, message: str, *, constraint: str | None = None) -> None:
        super().__init__(message)
        self.constraint = constraint


class LastOwner(Conflict):
    """The change would leave a workspace without an owner (409): nobody could manage its
    members any more."""

    code = "last_owner"


class LeaseLost(Conflict):
    code = "lease_lost"


class MissingWorkspace(RelataError):
    code = "missing_workspace"


class Unavailable(RelataError):
    code = "unavailable"

    def __init__(
        self, message: str, *, retry_after: int | None = None, code: str | None = None
    ) -> None:
        super().__init__(message, code=code)
        self.retry_after = retry_after


class Overloaded(Unavailable):
    code = "overloaded"


class Busy(Unavailable):
    """The database could not take the work now: another writer held it past the busy
    timeout, or a lock timeout, deadlock or serialization failure ended the transaction.
    Nothing was written; the same request can succeed on retry (a job retries it)."""

    code = "busy"


class NotConfigured(RelataError):
    """What a feature needs is not configured in this deployment (no language model, no
    embedding provider). Not a failure of the request's data and not transient: a pipeline
    stage that meets it is recorded as ``skipped`` and the item goes on (degraded)."""

    code = "not_configured"


class Permanent(RelataError):
    """Wraps a failure that repeating cannot fix; the job queue fails it at once."""

    code = "permanent"

    def __init__(self, message: str, *, cause: BaseException | None = None) -> None:
        super().__init__(message)
        self.__cause__ = cause
