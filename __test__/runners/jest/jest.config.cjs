module.exports = { rootDir: __dirname, testMatch: ["**/*.spec.cjs"], testEnvironment: "node" };
