//! Behaviour tests of the engines through the public API.

mod support;
mod wakeup_delay;

mod cancel_race;
mod drop_pending;
mod event_executor;
mod exactly_once;
mod executor_order;
mod handle;
mod wheel;
