"""A pi 0.73.1 `--mode json` stream for the headless bench: N `message_update` lines whose
answer text grows to SIZE bytes, each carrying the cumulative `message` and `partial`
snapshots as pi writes them (N=1000, SIZE=131072: about 132 MB). Usage: gen_pi_stream.py N SIZE
"""
import json
import sys


def main():
    updates, size = int(sys.argv[1]), int(sys.argv[2])
    filler = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor " * (
        size // 70 + 2
    )
    step = size // updates
    base = {
        "role": "assistant",
        "api": "openai-completions",
        "provider": "fake",
        "model": "m",
        "usage": {"input": 0, "output": 0},
        "stopReason": "stop",
        "timestamp": 1,
    }
    write = lambda event: sys.stdout.write(json.dumps(event) + "\n")
    write({"type": "session", "version": 3, "id": "perf", "timestamp": "t", "cwd": "/"})
    write({"type": "agent_start"})
    write({"type": "turn_start"})
    write({"type": "message_start", "message": dict(base, content=[])})
    text = ""
    for _ in range(updates):
        delta = filler[len(text) : len(text) + step]
        text += delta
        message = dict(base, content=[{"type": "text", "text": text}])
        write(
            {
                "type": "message_update",
                "assistantMessageEvent": {
                    "type": "text_delta",
                    "contentIndex": 0,
                    "delta": delta,
                    "partial": message,
                },
                "message": message,
            }
        )
    message = dict(base, content=[{"type": "text", "text": text}])
    write({"type": "message_end", "message": message})
    write({"type": "turn_end", "message": message, "toolResults": []})
    write({"type": "agent_end", "messages": [message]})


main()
