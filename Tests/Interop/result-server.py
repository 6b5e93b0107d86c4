"""Serves the browser check's page and prints each result the page reports (GET /result?TEXT)."""
import http.server
import sys
import urllib.parse


class Handler(http.server.SimpleHTTPRequestHandler):
    def do_GET(self):
        if self.path.startswith("/result?"):
            print("RESULT", urllib.parse.unquote(self.path[len("/result?"):]), flush=True)
            self.send_response(204)
            self.end_headers()
            return
        super().do_GET()

    def log_message(self, *args):
        pass


http.server.ThreadingHTTPServer((sys.argv[1], int(sys.argv[2])), Handler).serve_forever()
