/** taskvisor in front of taskvisor: the demo upstream is served over Streamable HTTP by its own process. */
import { registerAggregatorScenarios } from './scenarios.js';
import { freePort, startAggregator, startHttpDemo } from './harness.js';
import { tempDir } from '../support/processes.js';

registerAggregatorScenarios('Streamable HTTP', async () => {
  const cwd = await tempDir('taskvisor-agg-upstream-');
  const demo = await startHttpDemo(await freePort(), cwd.path);
  const aggregator = await startAggregator([{ name: 'demo', type: 'streamable-http', url: demo.url }]);
  return {
    ...aggregator,
    close: async () => {
      await aggregator.close();
      await demo.child.kill('SIGTERM');
      await cwd.remove();
    },
  };
});
