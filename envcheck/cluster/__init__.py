"""Cluster-wide checks run inside a torch.distributed job: rendezvous, gathering, drift, links."""
