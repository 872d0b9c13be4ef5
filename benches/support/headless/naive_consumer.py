"""The simplest correct consumer of a pi JSON stream, the headless bench's yardstick: one
`json.loads` a line, the new text found by comparing each cumulative snapshot with the last,
one JSON line out per delta. Usage: naive_consumer.py FILE"""
import json
import sys

seen = ""
for line in open(sys.argv[1]):
    event = json.loads(line)
    if event.get("type") == "message_update":
        text = event["message"]["content"][0]["text"]
        if text.startswith(seen):
            delta, seen = text[len(seen) :], text
            sys.stdout.write(json.dumps({"type": "assistant", "delta": delta}) + "\n")
