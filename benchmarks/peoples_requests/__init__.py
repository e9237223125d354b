"""The people's-requests set (benchmarks/data/peoples_requests/): requests in users' words
on real servers, its catalog (`catalog`), its halves (`split`), the benchmark (`run`) and its
README section (`table`)."""
