//! One integration-test binary (link time on 2 cores): every suite module
//! lives in `tests/suite/`. Test code may unwrap: a panic is a failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
