import { type Attributes, type HrTime, ValueType } from "@opentelemetry/api";
import { hrTime } from "@opentelemetry/core";
import {
  AggregationTemporality,
  type CollectionResult,
  DataPointType,
  type HistogramMetricData,
  type MetricProducer,
} from "@opentelemetry/sdk-metrics";

/** The SDK's default aggregation cardinality limit: the last series counts every set past the others. */
const MAX_SERIES = 2000;
const OVERFLOW: Attributes = { "otel.metric.overflow": true };

interface Series {
  attributes: Attributes;
  counts: number[];
  count: number;
  sum: number;
  min: number;
  max: number;
}

/** One explicit-bucket histogram, cumulative, as the SDK's default aggregation builds it. */
export class ExplicitHistogram {
  /** By the label object a caller passes: the server's label sets are built once and reused. */
  private readonly byObject = new Map<Attributes, Series>();
  /** By content, for a label object seen for the first time (a set rebuilt after its memo was cleared). */
  private readonly byContent = new Map<string, Series>();

  constructor(
    readonly name: string,
    readonly description: string,
    readonly unit: string,
    readonly boundaries: number[],
  ) {}

  record(value: number, attributes: Attributes): void {
    const series = this.byObject.get(attributes) ?? this.seriesOf(attributes);
    let i = 0;
    const bounds = this.boundaries;
    while (i < bounds.length && value > bounds[i]) i++; // upper bounds are inclusive, as the SDK's
    series.counts[i]++;
    series.count++;
    series.sum += value;
    if (value < series.min) series.min = value;
    if (value > series.max) series.max = value;
  }

  private seriesOf(attributes: Attributes): Series {
    const content = JSON.stringify(
      Object.keys(attributes)
        .sort()
        .map((k) => [k, attributes[k]]),
    );
    let series = this.byContent.get(content);
    if (!series) {
      if (this.byContent.size >= MAX_SERIES - 1 && attributes !== OVERFLOW) return this.seriesOf(OVERFLOW);
      series = {
        attributes: { ...attributes },
        counts: new Array(this.boundaries.length + 1).fill(0),
        count: 0,
        sum: 0,
        min: Number.POSITIVE_INFINITY,
        max: Number.NEGATIVE_INFINITY,
      };
      this.byContent.set(content, series);
    }
    // Objects are remembered only while the content map has room: a caller building a new object
    // per record cannot grow this map past the series' own bound.
    if (this.byObject.size < MAX_SERIES * 2) this.byObject.set(attributes, series);
    return series;
  }

  data(startTime: HrTime, endTime: HrTime): HistogramMetricData | undefined {
    if (this.byContent.size === 0) return undefined;
    return {
      descriptor: { name: this.name, description: this.description, unit: this.unit, valueType: ValueType.DOUBLE },
      aggregationTemporality: AggregationTemporality.CUMULATIVE,
      dataPointType: DataPointType.HISTOGRAM,
      dataPoints: [...this.byContent.values()].map((s) => ({
        attributes: s.attributes,
        startTime,
        endTime,
        value: {
          buckets: { boundaries: this.boundaries, counts: [...s.counts] },
          count: s.count,
          sum: s.sum,
          min: s.min,
          max: s.max,
        },
      })),
    };
  }
}

/**
 * The server's histograms, aggregated here and handed to the SDK's readers as a MetricProducer
 * (its extension point for metrics aggregated outside it). Why not the SDK's histogram instrument:
 * it hashes every record's attributes as sorted JSON to find its series, while the server records
 * a duration or two per request with label objects it has built once; here a record is a lookup by
 * that object and a bucket count (see bench/README.md, "Telemetry's cost per tools/call").
 * Cumulative, like the SDK's default; a reader asking for delta temporality still gets cumulative
 * points for these (assumed acceptable: OTLP carries the temporality with each metric).
 */
export class Histograms implements MetricProducer {
  private readonly all: ExplicitHistogram[] = [];
  private readonly startTime = hrTime();

  constructor(private readonly scope: { name: string; version: string }) {}

  define(name: string, description: string, unit: string, boundaries: number[]): ExplicitHistogram {
    const histogram = new ExplicitHistogram(name, description, unit, boundaries);
    this.all.push(histogram);
    return histogram;
  }

  async collect(): Promise<CollectionResult> {
    const endTime = hrTime();
    const metrics = this.all.flatMap((h) => h.data(this.startTime, endTime) ?? []);
    return {
      // The reader keeps its SDK's resource and appends these scope metrics.
      resourceMetrics: {
        resource: undefined as never,
        scopeMetrics: metrics.length ? [{ scope: this.scope, metrics }] : [],
      },
      errors: [],
    };
  }
}
