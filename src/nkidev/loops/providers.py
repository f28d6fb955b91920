"""Candidate providers for `nkidev optimize` and `nkidev debug`, behind one small interface.

    provider = get_provider("replay:candidates/")      # or "anthropic", "bedrock", "openai" (+ model, base_url)
    sources = provider.propose(request)               # up to request["width"] module texts; [] = exhausted
    provider.usage                                    # {"input": tokens, "output": tokens} so far

- `replay:DIR`: the files DIR/*.py in name order, one per candidate, for CI, tests and reproducing a run offline;
  `request["proposed"]` (how many candidates the run already took) says where to continue after a resume.
- `anthropic`: the Anthropic API (SDK `anthropic`, key from $ANTHROPIC_API_KEY), `--model`.
- `bedrock`: Amazon Bedrock's Converse API (SDK `boto3`, the usual AWS credential chain), `--model` (a model id),
  `--region`.
- `openai`: any OpenAI-compatible chat endpoint (SDK `openai`, `--base-url` for vLLM, Ollama, LM Studio; key from
  $OPENAI_API_KEY, or none for local servers), `--model`.
SDKs are optional extras imported when the provider is created (err_missing_extra with the install command).
Keys are read from the environment by the SDKs and never stored, logged or written to a report; a provider's
error messages are passed through `redact` before they go anywhere.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from nkidev.errors import NkiError, NkiUsageError
from nkidev.loops.prompt import build_prompt, extract_module

PROVIDERS = ("replay:DIR", "anthropic", "bedrock", "openai")
MAX_TOKENS = 8192
_SECRET = re.compile(r"(sk-[A-Za-z0-9_\-]{8,}|AKIA[0-9A-Z]{12,}|(?i:bearer)\s+[A-Za-z0-9._\-]{8,})")


def redact(text: str) -> str:
    """Remove anything that looks like a key from a message, and the values of the key variables themselves."""
    text = _SECRET.sub("[redacted]", str(text))
    for var in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        value = os.environ.get(var)
        if value and len(value) >= 8:
            text = text.replace(value, "[redacted]")
    return text


class ReplayProvider:
    """Candidates read from DIR/*.py in name order."""

    def __init__(self, directory: str | Path):
        self.name = f"replay:{directory}"
        self.directory = Path(directory)
        self.usage = {"input": 0, "output": 0}
        if not self.directory.is_dir():
            raise NkiUsageError(
                "err_provider_failed", f"replay directory {self.directory} does not exist", "pass replay:DIR with *.py files"
            )
        self.files = sorted(self.directory.glob("*.py"))
        if not self.files:
            raise NkiUsageError("err_provider_failed", f"replay directory {self.directory} has no *.py files", "put candidates in DIR/*.py")

    def propose(self, request: dict) -> list[str]:
        start = request.get("proposed", 0)
        return [p.read_text() for p in self.files[start : start + request.get("width", 1)]]


class _LLMProvider:
    """Shared by the API providers: one prompt per candidate, the module taken from the answer's code block."""

    name = "llm"

    def __init__(self, model: str):
        self.model = model
        self.usage = {"input": 0, "output": 0}

    def propose(self, request: dict) -> list[str]:
        system, user = build_prompt(request, request.get("errors") or [])
        out = []
        for _ in range(request.get("width", 1)):
            try:
                text = self.complete(system, user)
            except NkiError:
                raise
            except Exception as e:  # noqa: BLE001 - the SDK's errors (network, auth, quota) become a named error
                raise NkiError("err_provider_failed", f"{self.name}: {type(e).__name__}: {redact(e)}") from None
            module = extract_module(text)
            if module is not None:
                out.append(module)
        return out

    def complete(self, system: str, user: str) -> str:
        raise NotImplementedError


def _sdk(module: str, extra: str):
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise NkiUsageError(
            "err_missing_extra", f"the {extra} provider needs the `{module}` package", f"install the extra: pip install 'nkidev[{extra}]'"
        ) from None


class AnthropicProvider(_LLMProvider):
    name = "anthropic"

    def __init__(self, model: str | None):
        anthropic = _sdk("anthropic", "anthropic")
        if not os.environ.get("ANTHROPIC_API_KEY"):
            raise NkiUsageError(
                "err_provider_failed", "ANTHROPIC_API_KEY is not set", "export ANTHROPIC_API_KEY=... (never pass keys as flags)"
            )
        super().__init__(_need_model(model, "anthropic"))
        self.client = anthropic.Anthropic()

    def complete(self, system: str, user: str) -> str:
        reply = self.client.messages.create(
            model=self.model, max_tokens=MAX_TOKENS, system=system, messages=[{"role": "user", "content": user}]
        )
        self.usage["input"] += reply.usage.input_tokens
        self.usage["output"] += reply.usage.output_tokens
        return "".join(getattr(block, "text", "") for block in reply.content)


class BedrockProvider(_LLMProvider):
    name = "bedrock"

    def __init__(self, model: str | None, region: str | None):
        boto3 = _sdk("boto3", "bedrock")
        super().__init__(_need_model(model, "bedrock"))
        self.client = boto3.client("bedrock-runtime", region_name=region) if region else boto3.client("bedrock-runtime")

    def complete(self, system: str, user: str) -> str:
        reply = self.client.converse(
            modelId=self.model,
            system=[{"text": system}],
            messages=[{"role": "user", "content": [{"text": user}]}],
            inferenceConfig={"maxTokens": MAX_TOKENS},
        )
        usage = reply.get("usage", {})
        self.usage["input"] += usage.get("inputTokens", 0)
        self.usage["output"] += usage.get("outputTokens", 0)
        return "".join(part.get("text", "") for part in reply["output"]["message"]["content"])


class OpenAIProvider(_LLMProvider):
    name = "openai"

    def __init__(self, model: str | None, base_url: str | None):
        openai = _sdk("openai", "openai")
        super().__init__(_need_model(model, "openai"))
        # Local servers (vLLM, Ollama, LM Studio) take any key; the SDK insists on one being set.
        key = os.environ.get("OPENAI_API_KEY") or ("not-needed" if base_url else None)
        if key is None:
            raise NkiUsageError("err_provider_failed", "OPENAI_API_KEY is not set", "export OPENAI_API_KEY=..., or pass --base-url")
        self.client = openai.OpenAI(base_url=base_url, api_key=key)

    def complete(self, system: str, user: str) -> str:
        reply = self.client.chat.completions.create(
            model=self.model, max_tokens=MAX_TOKENS, messages=[{"role": "system", "content": system}, {"role": "user", "content": user}]
        )
        if reply.usage:
            self.usage["input"] += reply.usage.prompt_tokens or 0
            self.usage["output"] += reply.usage.completion_tokens or 0
        return reply.choices[0].message.content or ""


def _need_model(model: str | None, provider: str) -> str:
    if not model:
        raise NkiUsageError("err_invalid_argument", f"--provider {provider} needs --model", "pass the model name or id, e.g. --model NAME")
    return model


def get_provider(spec: str, model: str | None = None, base_url: str | None = None, region: str | None = None):
    """The provider `spec` names (see the module docstring)."""
    if spec.startswith("replay:"):
        return ReplayProvider(spec.removeprefix("replay:"))
    if spec == "anthropic":
        return AnthropicProvider(model)
    if spec == "bedrock":
        return BedrockProvider(model, region)
    if spec == "openai":
        return OpenAIProvider(model, base_url)
    raise NkiUsageError("err_invalid_argument", f"--provider {spec!r}", f"use one of: {', '.join(PROVIDERS)}")
