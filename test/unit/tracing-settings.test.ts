import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { ConfigError, loadConfig, type Env } from '../../src/config.js'
import { tracingSettings } from '../../src/tracing/tracing-settings.js'

/**
 * The OpenTelemetry variables as the specification resolves them (docs/configuration.md
 * "OpenTelemetry variables"): which endpoint and encoding, which service name, which
 * sampler; off unless OTEL_TRACES_EXPORTER=otlp; a bad value refused, naming the variable.
 */

const settings = (env: Env) => tracingSettings(loadConfig(env))
const ON = { OTEL_TRACES_EXPORTER: 'otlp' }

describe('OpenTelemetry settings', () => {
  it('are off unless OTEL_TRACES_EXPORTER=otlp, and off whatever it says with OTEL_SDK_DISABLED=true', () => {
    assert.equal(settings({}), null)
    assert.equal(settings({ OTEL_TRACES_EXPORTER: 'none' }), null)
    assert.equal(settings({ ...ON, OTEL_SDK_DISABLED: 'true' }), null)
    assert.notEqual(settings({ ...ON, OTEL_SDK_DISABLED: 'false' }), null)
  })

  it('send to the general endpoint`s /v1/traces, or to the traces endpoint as it is', () => {
    assert.equal(settings(ON)?.url, 'http://localhost:4318/v1/traces')
    assert.equal(
      settings({ ...ON, OTEL_EXPORTER_OTLP_ENDPOINT: 'https://c.example:4318/otlp' })?.url,
      'https://c.example:4318/otlp/v1/traces',
    )
    assert.equal(
      settings({ ...ON, OTEL_EXPORTER_OTLP_ENDPOINT: 'https://c.example/' })?.url,
      'https://c.example/v1/traces',
    )
    assert.equal(
      settings({
        ...ON,
        OTEL_EXPORTER_OTLP_ENDPOINT: 'https://c.example',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://t.example/in',
      })?.url,
      'https://t.example/in',
    )
  })

  it('take the traces` own protocol before the general one, http/protobuf by default', () => {
    assert.equal(settings(ON)?.protocol, 'http/protobuf')
    assert.equal(settings({ ...ON, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' })?.protocol, 'http/json')
    assert.equal(
      settings({
        ...ON,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/protobuf',
      })?.protocol,
      'http/protobuf',
    )
  })

  it('name the service by OTEL_SERVICE_NAME, else the resource attributes, else folder-service', () => {
    assert.equal(settings(ON)?.resource['service.name'], 'folder-service')
    const attributes = 'service.name=from-attributes,deployment.environment.name=prod'
    assert.deepEqual(settings({ ...ON, OTEL_RESOURCE_ATTRIBUTES: attributes })?.resource, {
      'service.name': 'from-attributes',
      'deployment.environment.name': 'prod',
    })
    assert.equal(
      settings({ ...ON, OTEL_RESOURCE_ATTRIBUTES: attributes, OTEL_SERVICE_NAME: 'own' })?.resource[
        'service.name'
      ],
      'own',
    )
  })

  it('give the ratio samplers 1 unless OTEL_TRACES_SAMPLER_ARG says otherwise', () => {
    assert.deepEqual(
      { sampler: settings(ON)?.sampler, ratio: settings(ON)?.ratio },
      { sampler: 'parentbased_always_on', ratio: 1 },
    )
    const ratio = settings({
      ...ON,
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.1',
    })
    assert.deepEqual(
      { sampler: ratio?.sampler, ratio: ratio?.ratio },
      { sampler: 'parentbased_traceidratio', ratio: 0.1 },
    )
  })

  it('refuse what they cannot use, naming the variable', () => {
    const refused: [Env, string][] = [
      [{ OTEL_TRACES_EXPORTER: 'zipkin' }, 'OTEL_TRACES_EXPORTER'],
      [{ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }, 'OTEL_EXPORTER_OTLP_PROTOCOL'],
      [{ OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'grpc' }, 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL'],
      [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' }, 'OTEL_EXPORTER_OTLP_ENDPOINT'],
      [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'https://user:secret@c.example' }, 'OTEL_EXPORTER_OTLP_ENDPOINT'],
      [{ OTEL_TRACES_SAMPLER: 'jaeger_remote' }, 'OTEL_TRACES_SAMPLER'],
      [{ OTEL_TRACES_SAMPLER_ARG: '1.5' }, 'OTEL_TRACES_SAMPLER_ARG'],
      [{ OTEL_TRACES_SAMPLER_ARG: 'half' }, 'OTEL_TRACES_SAMPLER_ARG'],
      [{ OTEL_RESOURCE_ATTRIBUTES: 'no-equals-sign' }, 'OTEL_RESOURCE_ATTRIBUTES'],
      [{ OTEL_RESOURCE_ATTRIBUTES: 'team=%zz' }, 'OTEL_RESOURCE_ATTRIBUTES'],
      [{ OTEL_SDK_DISABLED: 'yes' }, 'OTEL_SDK_DISABLED'],
    ]
    for (const [env, variable] of refused) {
      assert.throws(
        () => loadConfig(env),
        (error: unknown) => error instanceof ConfigError && error.setting === variable,
        JSON.stringify(env),
      )
    }
    // The refusal of a URL with credentials never repeats them.
    assert.throws(
      () => loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'https://user:secret@c.example' }),
      (error: Error) => !error.message.includes('secret'),
    )
  })
})
