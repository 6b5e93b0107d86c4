#!/usr/bin/env python3
"""Creates COUNT two-leg sessions on a mediarelay's control API and writes their legs, one session
a line, "A_HOST:A_PORT B_HOST:B_PORT" (bench/fastpath/flows.c's --legs). For bench/fastpath-cpu.sh.

    sessions.py HOST:PORT COUNT FILE
"""
import http.client
import json
import sys


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    host, port = sys.argv[1].rsplit(":", 1)
    count, path = int(sys.argv[2]), sys.argv[3]
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    lines = []
    for _ in range(count):
        connection.request("POST", "/v1/sessions", body=json.dumps({"legs": 2}),
                           headers={"Content-Type": "application/json"})
        answer = connection.getresponse()
        body = answer.read().decode()
        if answer.status != 201:
            sys.exit("sessions.py: POST /v1/sessions answered %d: %s" % (answer.status, body[:200]))
        legs = json.loads(body)["legs"]
        lines.append(" ".join("%s:%d" % (leg["address"], leg["port"]) for leg in legs[:2]))
    with open(path, "w") as file:
        file.write("\n".join(lines) + "\n")


main()
