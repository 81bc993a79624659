"""Helpers shared by the reward modules."""


def completion_text(completion) -> str:
    """TRL passes plain strings or conversational message lists; rewards score the assistant's text."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, dict):
        return str(completion.get("content", ""))
    return "".join(str(message.get("content", "")) for message in completion if message.get("role", "assistant")
                   == "assistant")
