"""A headless "browser" for the login tests, run as `$BROWSER`: `python3 browser.py URL`
opens URL and follows its redirects (the authorization server's approval lands on the
login's loopback address), as a person's browser would. Plain Python."""

import sys
import urllib.request

urllib.request.urlopen(sys.argv[1], timeout=30).read()
