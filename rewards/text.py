"""The text of a completion, whatever form TRL passes it in: for the project's rewards and for yours."""


def completion_text(completion) -> str:
    """TRL passes plain strings or conversational message lists; rewards score the assistant's text.

    >>> completion_text([{"role": "assistant", "content": "#### 4"}]), completion_text("#### 4")
    ('#### 4', '#### 4')
    """
    if isinstance(completion, str):
        return completion
    if isinstance(completion, dict):
        return str(completion.get("content", ""))
    return "".join(
        str(message.get("content", "")) for message in completion if message.get("role", "assistant") == "assistant"
    )
