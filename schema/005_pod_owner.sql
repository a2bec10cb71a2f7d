-- gpuledger schema 005: the workload a pod belongs to (kube_pod_owner), for
-- the reports' "top workloads". Applied by engine/ledger/store.c after
-- the earlier files; IF NOT EXISTS so the file applies whatever number the
-- migration list gives it.
--
-- owner_kind / owner_name: the pod's controlling owner as kube-state-metrics
-- reports it (Deployment, StatefulSet, DaemonSet, Job, ...), a ReplicaSet
-- whose name ends in a pod-template-hash folded to its Deployment
-- (engine/collect/owner.c). A pod without a row (no owner, or not collected) is its
-- own workload.
CREATE TABLE IF NOT EXISTS pod_owner (
    cluster    TEXT NOT NULL,
    namespace  TEXT NOT NULL,
    pod        TEXT NOT NULL,
    owner_kind TEXT NOT NULL,
    owner_name TEXT NOT NULL,
    seen_at    INTEGER NOT NULL,  -- the end of the window it was last collected in
    PRIMARY KEY (cluster, namespace, pod)
) WITHOUT ROWID;
