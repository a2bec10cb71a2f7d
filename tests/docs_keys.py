"""The configuration keys the engine accepts, read from engine/base/config.c.

Every object of the config file is checked there against a NULL-terminated
list of allowed keys (`static const char *const keys[] = {...}` handed to
check_keys); this module turns those lists into dotted key paths
(`prometheus.url`, `clusters[].name`). A list this table does not place is
an error, so a new block of keys cannot go undocumented unnoticed.
"""

import re

# (function, array) -> the path(s) of the object(s) the array lists the keys of
PLACES = {
    ("gl_config_load", "keys"): "",
    ("load_compute", "keys"): "compute",
    ("load_idle", "keys"): "idle_overhead",
    ("load_cluster_section", "cluster_keys"): "cluster",
    ("load_prices", "keys"): "prices",
    ("load_run", "keys"): "run",
    ("load_prometheus", "keys"): "prometheus",
    # object storage takes the aws_sigv4 block of the Prometheus client
    ("prom_auth_load", "none_keys"): ("prometheus.auth", "outputs.s3.auth"),
    ("prom_auth_load", "aws_keys"): ("prometheus.auth", "outputs.s3.auth"),
    ("prom_auth_load", "gcp_keys"): "prometheus.auth",
    ("prom_auth_load", "azure_keys"): "prometheus.auth",
    ("prom_auth_load", "basic_keys"): "prometheus.auth",
    ("load_clusters", "keys"): "clusters[]",
    ("load_collection", "keys"): "collection",
    ("load_memory", "keys"): "memory_source",
    ("load_memory", "label_keys"): "memory_source.labels",
    ("load_exporter", "keys"): "exporter",
    ("load_exporter", "label_keys"): "exporter.labels",
    ("load_exporter", "query_keys"): "exporter.queries.QUERY",
    ("load_allocation", "keys"): "allocation",
    ("load_dra", "keys"): "dra",
    ("load_dra", "label_keys"): "dra.labels",
    ("load_price_entry", "keys"): "prices.entries[]",
    ("load_rule", "keys"): "teams.rules[]",
    ("load_teams", "keys"): "teams",
    ("load_team", "tkeys"): "teams.catalogue[]",
    ("load_billing", "keys"): "billing",
    ("load_metrics", "keys"): "metrics",
    ("load_outputs", "keys"): "outputs",
    ("load_outputs", "s3_keys"): "outputs.s3",
    ("load_retention", "keys"): "retention",
    ("load_close", "keys"): "close",
    ("load_work", "keys"): "work",
    ("load_work_counter", "keys"): "work.counters[]",
    ("load_advise", "keys"): "advise",
}

ARRAY = re.compile(r"static const char \*const (\w*keys)\[\] = \{(.*?)\};", re.S)
FUNC = re.compile(r"^[a-z][\w *]*?\b(\w+)\(", re.M)


class Unplaced(Exception):
    pass


def engine_keys(source):
    """Dotted paths of every key, in source order, without duplicates."""
    funcs = [(m.start(), m.group(1)) for m in FUNC.finditer(source)]
    paths = []
    for m in ARRAY.finditer(source):
        fn = ([f for pos, f in funcs if pos < m.start()] or ["(file scope)"])[-1]
        place = PLACES.get((fn, m.group(1)))
        if place is None:
            raise Unplaced("engine/base/config.c: key list %s in %s() is not placed in "
                           "tests/docs_keys.py PLACES" % (m.group(1), fn))
        for key in re.findall(r'"([^"]+)"', m.group(2)):
            for p in (place,) if isinstance(place, str) else place:
                path = p + "." + key if p else key
                if path not in paths:
                    paths.append(path)
    return paths
