//! Catalogue presentation and routing (Appendix A.2, A.3.2; Tables 4 and 6).
