//! Behaviour tests of both engines through the public API.

mod support;

mod cancel_race;
mod drop_pending;
mod exactly_once;
mod executor_order;
mod handle;
mod wheel;
