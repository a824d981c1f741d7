import type { Config } from '../config.js'
import { DEFAULT_SERVICE_NAME } from './otel-values.js'

/**
 * What the OpenTelemetry variables of the configuration ask for, resolved as the
 * specification resolves them (a signal's own endpoint and protocol before the general
 * ones, OTEL_SERVICE_NAME before the service.name of OTEL_RESOURCE_ATTRIBUTES), or null
 * when tracing is off: OTEL_TRACES_EXPORTER unset or `none`, or OTEL_SDK_DISABLED=true.
 */

type OtlpProtocol = 'http/protobuf' | 'http/json'

type SamplerName =
  | 'parentbased_always_on'
  | 'parentbased_always_off'
  | 'parentbased_traceidratio'
  | 'always_on'
  | 'always_off'
  | 'traceidratio'

export interface TracingSettings {
  /** where the spans are POSTed */
  url: string
  protocol: OtlpProtocol
  sampler: SamplerName
  /** the share of trace ids the ratio samplers keep */
  ratio: number
  /** the resource: service.name and what OTEL_RESOURCE_ATTRIBUTES adds */
  resource: Readonly<Record<string, string>>
  /** the batch processor's longest wait (ms) and its queue's bound */
  scheduleDelayMs: number
  maxQueueSize: number
}

export type TracingConfig = Pick<
  Config,
  | 'otelSdkDisabled'
  | 'otelTracesExporter'
  | 'otelExporterOtlpEndpoint'
  | 'otelExporterOtlpTracesEndpoint'
  | 'otelExporterOtlpProtocol'
  | 'otelExporterOtlpTracesProtocol'
  | 'otelServiceName'
  | 'otelResourceAttributes'
  | 'otelTracesSampler'
  | 'otelTracesSamplerArg'
  | 'otelBspScheduleDelay'
  | 'otelBspMaxQueueSize'
>

/** The general endpoint is a base: the traces' path is appended to whatever path it has. */
function tracesUrl(endpoint: string): string {
  return `${endpoint.endsWith('/') ? endpoint : `${endpoint}/`}v1/traces`
}

export function tracingSettings(config: TracingConfig): TracingSettings | null {
  if (config.otelSdkDisabled || config.otelTracesExporter !== 'otlp') return null
  const named = config.otelResourceAttributes['service.name']
  return {
    url: config.otelExporterOtlpTracesEndpoint || tracesUrl(config.otelExporterOtlpEndpoint),
    protocol: (config.otelExporterOtlpTracesProtocol || config.otelExporterOtlpProtocol) as OtlpProtocol,
    sampler: config.otelTracesSampler as SamplerName,
    ratio: config.otelTracesSamplerArg ?? 1,
    resource: {
      ...config.otelResourceAttributes,
      'service.name': config.otelServiceName || named || DEFAULT_SERVICE_NAME,
    },
    scheduleDelayMs: config.otelBspScheduleDelay,
    maxQueueSize: config.otelBspMaxQueueSize,
  }
}
