"""Zoo: Karimireddy et al. 2020 (arXiv:1910.06378v4), SCAFFOLD's strongly convex bound (Lemma 15 summed, the explicit
form behind Theorem III) and FedAvg's Theorem I (an O~ statement, recorded unverified). Importing the package registers
the records and the checks."""
from . import checks, records, worst  # noqa: F401
