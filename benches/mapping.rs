//! Mapping throughput: the pi mapper on a stream whose text grows to 256 KiB over 2,000
//! updates (every line carrying two cumulative snapshots), against the floor of validating the
//! same lines with serde_json into `IgnoredAny`. Target: mapper ≤ 2x the floor.

mod support;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};

use agentty::provider::pi::mapper::PiMapper;
use agentty::provider::{ExitFacts, Mapper};

fn mapping(c: &mut Criterion) {
    let lines = support::pi_stream::pi_stream(256 * 1024, 2000);
    let bytes: usize = lines.iter().map(String::len).sum();
    let mut group = c.benchmark_group("pi_stream_256KiB_2000_updates");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(bytes as u64));
    group.bench_function("floor_serde_ignored_any", |b| {
        b.iter(|| {
            for line in &lines {
                let _: serde::de::IgnoredAny = serde_json::from_str(line).unwrap();
            }
        })
    });
    group.bench_function("pi_mapper", |b| {
        b.iter(|| {
            let mut mapper = PiMapper::new("pi", false);
            let mut out = Vec::new();
            let mut text_len = 0;
            for line in &lines {
                mapper.map_line(line, &mut out);
                for message in out.drain(..) {
                    if let agentty::stream::AgentMessage::Assistant { delta } = message {
                        text_len += delta.len();
                    }
                }
            }
            mapper.finish(
                ExitFacts {
                    exit_code: Some(0),
                    ..ExitFacts::default()
                },
                &mut out,
            );
            text_len
        })
    });
    group.finish();
}

criterion_group!(benches, mapping);
criterion_main!(benches);
