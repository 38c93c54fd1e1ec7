"""Server builds: sourced records of whole machines (chassis, CPUs, GPUs, RAM, storage, NICs, PSUs, price).

listing.py builds what `rigplan servers --json` prints; power.py the node's electrical load and
cooling.

May import: catalog, domain, bounds, files, units, errors.
"""

from rigplan.servers.load import get_server, load_servers, read_server_file, resolve_build
from rigplan.servers.schema import ServerRecord

__all__ = ["ServerRecord", "get_server", "load_servers", "read_server_file", "resolve_build"]
