//! The name responder of a run whose network is denied: the sandbox's `/etc/resolv.conf`
//! names it (on the sandbox's `127.0.0.1:53`), and it answers every query at once with "no
//! such name" (`NXDOMAIN`), so a lookup fails at once instead of waiting out a resolver that
//! cannot be reached; and it records the names asked, so that `run` can say which hosts the
//! command tried. It never asks anyone else: nothing a query holds leaves the sandbox.
//!
//! Queries are read as hostile: anything that is not one well-formed standard query is
//! answered with a bare error header, or not at all (a datagram too short to carry a header,
//! or a response, which could only make two responders talk forever).

use std::sync::{Arc, Mutex};

use tokio::net::UdpSocket;

use crate::store::network_report::MAX_REFUSALS;

/// The largest datagram read (a DNS message over UDP; longer ones are cut and so malformed).
const MAX_DATAGRAM: usize = 4096;

/// The longest name a query may carry, in wire form.
const MAX_NAME: usize = 255;

/// The response codes given.
const FORMERR: u8 = 1;
const NXDOMAIN: u8 = 3;
const NOTIMP: u8 = 4;

/// The names the command looked up, in the order first asked, each once (at most [`MAX_REFUSALS`]).
#[derive(Debug, Default)]
pub struct Lookups {
    names: Vec<String>,
}

impl Lookups {
    /// Records `name` unless it is already there or the list is full.
    pub fn record(&mut self, name: String) {
        if self.names.len() < MAX_REFUSALS && !self.names.contains(&name) {
            self.names.push(name);
        }
    }

    /// The names recorded.
    pub fn into_names(self) -> Vec<String> {
        self.names
    }
}

/// The answer to one datagram, and the host name it asked for when it is one worth
/// recording (see [`host_name`]); `None`: no answer.
pub fn answer(query: &[u8]) -> Option<(Vec<u8>, Option<String>)> {
    let header = query.get(..12)?;
    let flags = u16::from_be_bytes([header[2], header[3]]);
    if flags & 0x8000 != 0 {
        return None;
    }
    let opcode = ((flags >> 11) & 0xf) as u8;
    let count = u16::from_be_bytes([header[4], header[5]]);
    if opcode != 0 {
        return Some((bare(header, NOTIMP), None));
    }
    if count != 1 {
        return Some((bare(header, FORMERR), None));
    }
    let Some((end, labels)) = question(query) else {
        return Some((bare(header, FORMERR), None));
    };
    let mut response = bare(header, NXDOMAIN);
    response[4..6].copy_from_slice(&1u16.to_be_bytes());
    response.extend_from_slice(&query[12..end]);
    Some((response, host_name(&labels)))
}

/// A response header to `header` with `rcode` and no records: the query's id, opcode and
/// recursion-desired bit kept, recursion not available.
fn bare(header: &[u8], rcode: u8) -> Vec<u8> {
    let mut response = vec![0u8; 12];
    response[..2].copy_from_slice(&header[..2]);
    response[2] = 0x80 | (header[2] & 0x79);
    response[3] = rcode;
    response
}

/// The end of the question that starts at byte 12, and its name's labels: `None` when it is
/// malformed (a compression pointer, a label over 63 bytes, a name over 255, or cut short).
fn question(query: &[u8]) -> Option<(usize, Vec<&[u8]>)> {
    let mut at = 12;
    let mut labels = Vec::new();
    loop {
        let len = usize::from(*query.get(at)?);
        if len == 0 {
            at += 1;
            break;
        }
        if len > 63 || at + 1 + len - 12 > MAX_NAME {
            return None;
        }
        labels.push(query.get(at + 1..at + 1 + len)?);
        at += 1 + len;
    }
    // The type and class.
    query.get(at..at + 4)?;
    Some((at + 4, labels))
}

/// The name as a host name, lower case and without the final dot, when it is one: labels of
/// letters, digits, `-` and `_`, not a reverse lookup (`…in-addr.arpa`, `…ip6.arpa`). Only
/// such names are recorded: whatever else a query holds is answered and forgotten.
fn host_name(labels: &[&[u8]]) -> Option<String> {
    let plain = |label: &&[u8]| {
        label
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || *b == b'-' || *b == b'_')
    };
    if labels.is_empty() || !labels.iter().all(plain) {
        return None;
    }
    let name = labels
        .iter()
        .map(|l| String::from_utf8_lossy(l).to_ascii_lowercase())
        .collect::<Vec<_>>()
        .join(".");
    (!name.ends_with(".arpa")).then_some(name)
}

/// Answers queries on `socket` until the service stops, recording the names asked in `lookups`
/// before each answer goes out (so a command that saw its answer has its name recorded).
pub async fn serve(socket: UdpSocket, lookups: Arc<Mutex<Lookups>>) {
    let mut buf = vec![0u8; MAX_DATAGRAM];
    loop {
        let Ok((n, from)) = socket.recv_from(&mut buf).await else {
            // An error of the socket's own (an ICMP error of an earlier answer): go on, but
            // never spin on one that stays.
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
            continue;
        };
        let Some((response, name)) = answer(&buf[..n]) else {
            continue;
        };
        if let Some(name) = name {
            lookups
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .record(name);
        }
        let _ = socket.send_to(&response, from).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(id: u16, name: &str, qtype: u16) -> Vec<u8> {
        let mut q = id.to_be_bytes().to_vec();
        q.extend_from_slice(&[0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]);
        for label in name.split('.').filter(|l| !l.is_empty()) {
            q.push(label.len() as u8);
            q.extend_from_slice(label.as_bytes());
        }
        q.push(0);
        q.extend_from_slice(&qtype.to_be_bytes());
        q.extend_from_slice(&1u16.to_be_bytes());
        q
    }

    #[test]
    fn a_query_is_answered_no_such_name_with_its_question_and_its_name_recorded() {
        let q = query(0xbeef, "Registry.NPMJS.org.", 28);
        let (response, name) = answer(&q).unwrap();
        assert_eq!(name.as_deref(), Some("registry.npmjs.org"));
        assert_eq!(&response[..2], &[0xbe, 0xef]);
        // A response, recursion desired kept, NXDOMAIN; one question, no records.
        assert_eq!(response[2], 0x81);
        assert_eq!(response[3], NXDOMAIN);
        assert_eq!(&response[4..12], &[0, 1, 0, 0, 0, 0, 0, 0]);
        assert_eq!(&response[12..], &q[12..]);
    }

    #[test]
    fn responses_and_short_datagrams_get_no_answer() {
        let mut q = query(1, "a.example", 1);
        q[2] |= 0x80;
        assert_eq!(answer(&q), None);
        assert_eq!(answer(&[0u8; 11]), None);
        assert_eq!(answer(&[]), None);
    }

    #[test]
    fn malformed_questions_get_a_bare_error_and_record_nothing() {
        let good = query(7, "a.example", 1);
        let mut pointer = good[..12].to_vec();
        pointer.extend_from_slice(&[0xc0, 0x0c, 0, 1, 0, 1]);
        let mut long_label = good[..12].to_vec();
        long_label.push(64);
        long_label.extend_from_slice(&[b'a'; 64]);
        long_label.extend_from_slice(&[0, 0, 1, 0, 1]);
        let mut two = good.clone();
        two[5] = 2;
        let mut long_name = good[..12].to_vec();
        for _ in 0..5 {
            long_name.push(63);
            long_name.extend_from_slice(&[b'a'; 63]);
        }
        long_name.extend_from_slice(&[0, 0, 1, 0, 1]);
        for (bad, rcode) in [
            (good[..good.len() - 1].to_vec(), FORMERR),
            (pointer, FORMERR),
            (long_label, FORMERR),
            (two, FORMERR),
            (long_name, FORMERR),
        ] {
            let (response, name) = answer(&bad).unwrap();
            assert_eq!((response.len(), response[3], name), (12, rcode, None));
        }
        let mut update = good;
        update[2] = 0x28;
        assert_eq!(answer(&update).unwrap().0[3], NOTIMP);
    }

    #[test]
    fn names_that_are_no_host_names_are_answered_but_not_recorded() {
        for name in [
            "1.0.0.127.in-addr.arpa",
            "x$(touch /tmp/p).example",
            "a b.example",
            "",
        ] {
            let (response, recorded) = answer(&query(3, name, 1)).unwrap();
            assert_eq!((response[3], recorded), (NXDOMAIN, None), "{name}");
        }
        let mut odd = query(3, "ab.example", 1);
        odd[13] = 0xff;
        assert_eq!(answer(&odd).unwrap().1, None);
    }

    #[test]
    fn garbage_never_panics_and_any_answer_is_a_bounded_response_to_its_id() {
        // A small xorshift: the same garbage every time, no dependency.
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for round in 0..20_000 {
            let len = (next() % 600) as usize;
            let mut datagram: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            if round % 2 == 0 && len >= 12 {
                // Half look like queries, so that the question parser gets garbage too.
                datagram[2] &= 0x01;
                datagram[4] = 0;
                datagram[5] = 1;
            }
            if let Some((response, name)) = answer(&datagram) {
                assert_eq!(&response[..2], &datagram[..2]);
                assert_ne!(response[2] & 0x80, 0);
                assert!(response.len() <= datagram.len().max(12));
                if let Some(name) = name {
                    assert!(name.len() <= MAX_NAME);
                    assert!(name.bytes().all(|b| b.is_ascii_lowercase()
                        || b.is_ascii_digit()
                        || b"-_.".contains(&b)));
                }
            }
        }
    }

    #[test]
    fn lookups_keep_each_name_once_and_stop_at_the_limit() {
        let mut lookups = Lookups::default();
        lookups.record("a.example".into());
        lookups.record("a.example".into());
        for i in 0..MAX_REFUSALS + 10 {
            lookups.record(format!("h{i}.example"));
        }
        let names = lookups.into_names();
        assert_eq!(names.len(), MAX_REFUSALS);
        assert_eq!(names[0], "a.example");
    }
}
