//! The psync engine: `pread`/`pwrite` from a pool of threads per shard, one per slot (fio's
//! psync with as many jobs), so a shard has up to `parallelism` requests in the kernel.
//! A slot's buffer travels to the thread with the request and back with its completion.
//! The threads share one queue (a mutex and a condition variable): a thread that finishes
//! takes the next request without sleeping (a channel per thread, tried, made every request
//! a wake-up: 2-3x slower), and idle threads sleep on the condition variable rather than
//! queueing on the lock of a shared channel receiver (5 futex calls a request).

use std::collections::VecDeque;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::engine::{AlignedBuf, Completion, Direction, Engine, Request};

struct Job {
    request: Request,
    buf: AlignedBuf,
}

struct Done {
    slot: usize,
    result: Result<usize, i32>,
    buf: AlignedBuf,
}

/// The threads' queue of requests: `None` once the engine is dropped.
type JobQueue = (Mutex<Option<VecDeque<Job>>>, Condvar);

/// pread/pwrite from `slots` threads.
pub struct PsyncEngine {
    buffers: Vec<Option<AlignedBuf>>,
    jobs: Arc<JobQueue>,
    done: Receiver<Done>,
    threads: Vec<JoinHandle<()>>,
}

impl PsyncEngine {
    /// An engine of `slots` buffers of `reqsize` bytes on `file`; `name` names its threads.
    pub fn new(file: Arc<File>, slots: usize, reqsize: usize, name: &str) -> Result<Self, String> {
        let jobs: Arc<JobQueue> = Arc::new((Mutex::new(Some(VecDeque::new())), Condvar::new()));
        let (done_tx, done) = channel::<Done>();
        let mut threads = Vec::with_capacity(slots);
        for i in 0..slots {
            let job_rx = jobs.clone();
            let done_tx = done_tx.clone();
            let file = file.clone();
            let handle = std::thread::Builder::new()
                .name(format!("{name}-psync-{i}"))
                .spawn(move || worker(&file, &job_rx, &done_tx))
                .map_err(|e| format!("cannot start a psync thread: {e}"))?;
            threads.push(handle);
        }
        Ok(PsyncEngine {
            buffers: (0..slots).map(|_| Some(AlignedBuf::new(reqsize))).collect(),
            jobs,
            done,
            threads,
        })
    }

    fn take(&mut self, done: Done, out: &mut Vec<Completion>) {
        self.buffers[done.slot] = Some(done.buf);
        out.push(Completion {
            slot: done.slot,
            result: done.result,
        });
    }
}

fn worker(file: &File, jobs: &JobQueue, done: &Sender<Done>) {
    let (queue, ready) = jobs;
    loop {
        let job = {
            let Ok(mut q) = queue.lock() else { return };
            loop {
                match q.as_mut() {
                    None => return,
                    Some(q_jobs) => {
                        if let Some(job) = q_jobs.pop_front() {
                            break job;
                        }
                    }
                }
                q = match ready.wait(q) {
                    Ok(q) => q,
                    Err(_) => return,
                };
            }
        };
        let Job { request, mut buf } = job;
        let slice = buf.as_mut_slice();
        let result = match request.direction {
            Direction::Read => file.read_at(slice, request.offset),
            Direction::Write => file.write_at(slice, request.offset),
        }
        .map_err(|e| e.raw_os_error().unwrap_or(libc::EIO));
        if done
            .send(Done {
                slot: request.slot,
                result,
                buf,
            })
            .is_err()
        {
            return;
        }
    }
}

impl Engine for PsyncEngine {
    fn submit(&mut self, request: Request) -> Result<(), String> {
        let buf = self.buffers[request.slot]
            .take()
            .ok_or_else(|| format!("slot {} already has a request in flight", request.slot))?;
        let (queue, ready) = &*self.jobs;
        let mut q = queue
            .lock()
            .map_err(|_| "a psync thread panicked".to_string())?;
        q.as_mut()
            .expect("open until dropped")
            .push_back(Job { request, buf });
        drop(q);
        ready.notify_one();
        Ok(())
    }

    fn flush(&mut self) -> Result<(), String> {
        Ok(())
    }

    fn reap(&mut self, out: &mut Vec<Completion>, wait_ns: u64) -> Result<(), String> {
        let before = out.len();
        while let Ok(done) = self.done.try_recv() {
            self.take(done, out);
        }
        if out.len() == before && wait_ns > 0 {
            match self.done.recv_timeout(Duration::from_nanos(wait_ns)) {
                Ok(done) => self.take(done, out),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    return Err("the psync threads are gone".to_string())
                }
            }
        }
        Ok(())
    }

    fn buffer(&mut self, slot: usize) -> &mut [u8] {
        self.buffers[slot]
            .as_mut()
            .expect("the slot has no request in flight")
            .as_mut_slice()
    }
}

impl Drop for PsyncEngine {
    fn drop(&mut self) {
        let (queue, ready) = &*self.jobs;
        if let Ok(mut q) = queue.lock() {
            *q = None;
        }
        ready.notify_all();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}
