"""Stable error codes: every refusal names a code and what to do about it."""
from __future__ import annotations


class LaminaError(Exception):
    """A refusal with a stable `LAMINA_…` code and a one-line remedy."""

    code: str = "LAMINA_ERROR"

    def __init__(self, message: str, remedy: str = "", *, code: str | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code
        self.message = message
        self.remedy = remedy

    def __str__(self) -> str:
        tail = f" — {self.remedy}" if self.remedy else ""
        return f"{self.code}: {self.message}{tail}"


class IndexLocked(LaminaError):
    code = "LAMINA_INDEX_LOCKED"


class IndexCorrupt(LaminaError):
    code = "LAMINA_INDEX_CORRUPT"


class WorkspaceInvalid(LaminaError):
    code = "LAMINA_WORKSPACE_INVALID"


class NoActiveGeneration(LaminaError):
    code = "LAMINA_NO_INDEX"


class RetrievalIntegrity(LaminaError):
    code = "LAMINA_RETRIEVAL_INTEGRITY"


class DenseUnavailable(LaminaError):
    code = "LAMINA_DENSE_UNAVAILABLE"


class GraphInvalid(LaminaError):
    code = "LAMINA_GRAPH_INVALID"


class WorkflowNotFound(LaminaError):
    code = "LAMINA_WORKFLOW_NOT_FOUND"


class BadInput(LaminaError):
    code = "LAMINA_BAD_INPUT"
