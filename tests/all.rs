//! One integration-test binary (link time on 2 cores): every suite module
//! lives in `tests/suite/`.

mod suite;
