//! The wheel's buckets: Netty's `HashedWheelBucket`, doubly linked lists whose nodes live
//! in one slab owned by the worker thread, so unlinking any entry is O(1).

use slab::Slab;

struct Node<E> {
    entry: E,
    prev: Option<usize>,
    next: Option<usize>,
    bucket: usize,
}

#[derive(Clone, Copy, Default)]
struct List {
    head: Option<usize>,
    tail: Option<usize>,
}

pub(super) struct Buckets<E> {
    lists: Vec<List>,
    nodes: Slab<Node<E>>,
}

impl<E> Buckets<E> {
    pub(super) fn new(buckets: usize) -> Self {
        Self {
            lists: vec![List::default(); buckets],
            nodes: Slab::new(),
        }
    }

    /// Appends `entry` to `bucket` (Netty's `addTimeout`) and returns its key.
    pub(super) fn push_back(&mut self, bucket: usize, entry: E) -> usize {
        let prev = self.lists[bucket].tail;
        let key = self.nodes.insert(Node {
            entry,
            prev,
            next: None,
            bucket,
        });
        match prev {
            Some(prev) => self.nodes[prev].next = Some(key),
            None => self.lists[bucket].head = Some(key),
        }
        self.lists[bucket].tail = Some(key);
        key
    }

    /// Unlinks the entry at `key` from its bucket and frees the key for reuse.
    pub(super) fn remove(&mut self, key: usize) -> E {
        let node = self.nodes.remove(key);
        match node.prev {
            Some(prev) => self.nodes[prev].next = node.next,
            None => self.lists[node.bucket].head = node.next,
        }
        match node.next {
            Some(next) => self.nodes[next].prev = node.prev,
            None => self.lists[node.bucket].tail = node.prev,
        }
        node.entry
    }

    pub(super) fn first(&self, bucket: usize) -> Option<usize> {
        self.lists[bucket].head
    }

    pub(super) fn next(&self, key: usize) -> Option<usize> {
        self.nodes[key].next
    }

    pub(super) fn get(&self, key: usize) -> &E {
        &self.nodes[key].entry
    }

    pub(super) fn get_mut(&mut self, key: usize) -> &mut E {
        &mut self.nodes[key].entry
    }
}

#[cfg(test)]
mod tests {
    use super::Buckets;

    fn contents(buckets: &Buckets<u32>, bucket: usize) -> Vec<u32> {
        let mut out = Vec::new();
        let mut cursor = buckets.first(bucket);
        while let Some(key) = cursor {
            out.push(*buckets.get(key));
            cursor = buckets.next(key);
        }
        out
    }

    #[test]
    fn unlinks_head_middle_and_tail() {
        let mut buckets = Buckets::new(2);
        let keys: Vec<usize> = (0..5).map(|value| buckets.push_back(1, value)).collect();
        let other = buckets.push_back(0, 99);

        assert_eq!(buckets.remove(keys[2]), 2);
        assert_eq!(contents(&buckets, 1), [0, 1, 3, 4]);
        assert_eq!(buckets.remove(keys[0]), 0);
        assert_eq!(contents(&buckets, 1), [1, 3, 4]);
        assert_eq!(buckets.remove(keys[4]), 4);
        assert_eq!(contents(&buckets, 1), [1, 3]);

        *buckets.get_mut(keys[3]) += 10;
        let appended = buckets.push_back(1, 5);
        assert_eq!(contents(&buckets, 1), [1, 13, 5]);

        for key in [keys[1], appended, keys[3]] {
            buckets.remove(key);
        }
        assert_eq!(contents(&buckets, 1), []);
        assert_eq!(buckets.first(1), None);
        assert_eq!(contents(&buckets, 0), [99]);
        assert_eq!(buckets.remove(other), 99);
        assert_eq!(contents(&buckets, 0), []);
    }
}
