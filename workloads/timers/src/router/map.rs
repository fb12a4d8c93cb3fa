//! The handler map as the router's joined futures share it. It sits behind a std mutex, as
//! in the scylla driver: futures joined in one task cannot share a `RefCell` and still be
//! spawned on a multi-thread runtime. Only those futures take it, never across an await,
//! so it is never contended: [`RouterMap::lock`] is a `try_lock` that panics if it ever is
//! (the driver's `try_lock().unwrap()`), and in debug builds it also checks that the thread
//! is polling this router's task, which catches a caller touching it even when the router
//! is idle. Every release publishes the map's counters.

use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::handler_map::HandlerMap;
use crate::router::published::Published;
use crate::router::scope;

/// See the module documentation.
pub(crate) struct RouterMap {
    key: u64,
    map: Mutex<HandlerMap>,
    published: Arc<Published>,
}

impl RouterMap {
    /// `map`, to be used only inside [`scope::run_as`] with [`RouterMap::key`].
    pub(super) fn new(map: HandlerMap, published: Arc<Published>) -> RouterMap {
        RouterMap {
            key: scope::new_key(),
            map: Mutex::new(map),
            published,
        }
    }

    /// The key of the router task that owns the map.
    pub(super) fn key(&self) -> u64 {
        self.key
    }

    /// Where the map's counters go.
    pub(crate) fn published(&self) -> &Published {
        &self.published
    }

    /// Takes the map; the guard publishes its counters when dropped.
    pub(crate) fn lock(&self) -> MapGuard<'_> {
        debug_assert!(
            scope::is_polling(self.key),
            "a connection's handler map was touched outside its router task"
        );
        let map = self.map.try_lock().expect(
            "the router's handler map is only taken by its router task, one future at a time",
        );
        MapGuard {
            map,
            published: &self.published,
        }
    }
}

/// The router's hold on its handler map.
pub(crate) struct MapGuard<'a> {
    map: MutexGuard<'a, HandlerMap>,
    published: &'a Published,
}

impl<'a> MapGuard<'a> {
    /// Where the map's counters go.
    pub(crate) fn published(&self) -> &'a Published {
        self.published
    }
}

impl Deref for MapGuard<'_> {
    type Target = HandlerMap;

    fn deref(&self) -> &HandlerMap {
        &self.map
    }
}

impl DerefMut for MapGuard<'_> {
    fn deref_mut(&mut self) -> &mut HandlerMap {
        &mut self.map
    }
}

impl Drop for MapGuard<'_> {
    fn drop(&mut self) {
        self.published.map_changed(&self.map);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::completion::{Completion, Reply};
    use crate::handler_map::{Handler, RequestId};

    fn router_map() -> RouterMap {
        let map = HandlerMap::new(None);
        let published = Arc::new(Published::new(&map));
        RouterMap::new(map, published)
    }

    #[tokio::test]
    async fn the_router_task_takes_its_map_and_publishes_on_release() {
        let map = router_map();
        scope::run_as(map.key(), async {
            let handler = Handler {
                id: RequestId::from_raw(1),
                reply: Reply::Cell(Arc::new(Completion::new())),
                deadline: None,
                measured: true,
            };
            assert!(map.lock().allocate(handler).is_ok());
            tokio::task::yield_now().await;
            assert_eq!(map.lock().live(), 1);
        })
        .await;
        assert_eq!(map.published().live(), 1);
    }

    #[cfg(debug_assertions)]
    #[test]
    #[should_panic(expected = "outside its router task")]
    fn a_caller_thread_may_not_take_the_map() {
        router_map().lock();
    }

    #[cfg(debug_assertions)]
    #[tokio::test]
    #[should_panic(expected = "outside its router task")]
    async fn another_router_may_not_take_the_map() {
        let (mine, theirs) = (router_map(), router_map());
        scope::run_as(mine.key(), async {
            theirs.lock();
        })
        .await;
    }
}
